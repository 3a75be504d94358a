#include "stream/stream_diarizer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <random>
#include <thread>

#include "core/error.h"
#include "stream/stream_test_support.h"

namespace parley::stream {
using frames::Turn;
namespace {

using testing::conversation;
using testing::LevelModel;

struct StreamRun {
  std::vector<StreamEvent> events;
  pipeline::DiarizationResult result;
};

StreamRun stream_in_chunks(const StreamModels& models, const StreamConfig& config,
                           const std::vector<float>& audio, std::vector<std::size_t> sizes) {
  StreamDiarizer diarizer(models, config);
  StreamRun run;
  std::size_t at = 0;
  std::size_t k = 0;
  while (at < audio.size()) {
    const std::size_t n = std::min(sizes[k++ % sizes.size()], audio.size() - at);
    diarizer.push(std::span<const float>(audio).subspan(at, n));
    at += n;
    for (StreamEvent& e : diarizer.take_events()) run.events.push_back(std::move(e));
  }
  run.result = diarizer.finish();
  for (StreamEvent& e : diarizer.take_events()) run.events.push_back(std::move(e));
  return run;
}

void expect_same_events(const std::vector<StreamEvent>& a, const std::vector<StreamEvent>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(a[i].same_decision(b[i]))
        << i << ": " << a[i].to_json() << " vs " << b[i].to_json();
  }
}

TEST(StreamDiarizer, EventsDoNotDependOnChunkSizes) {
  const StreamModels models(std::make_unique<LevelModel>());
  StreamConfig config;
  config.provisional = true;
  const std::vector<float> audio = conversation(45.0, 3);
  const StreamRun whole = stream_in_chunks(models, config, audio, {audio.size()});
  ASSERT_GT(whole.events.size(), 10U);
  expect_same_events(whole.events, stream_in_chunks(models, config, audio, {1, 7, 333}).events);
  expect_same_events(whole.events, stream_in_chunks(models, config, audio, {8000}).events);
  expect_same_events(whole.events, stream_in_chunks(models, config, audio, {12345, 160001}).events);
}

TEST(StreamDiarizer, StageTimesSplitEveryStep) {
  const StreamModels models(std::make_unique<LevelModel>());
  StreamDiarizer diarizer(models, StreamConfig{});
  EXPECT_TRUE(diarizer.stage_times().entries().empty());
  diarizer.push(std::vector<float>(8000, 0.1F));  // one step of 0.5 s
  const auto names = [&] {
    std::vector<std::string> result;
    for (const auto& [stage, seconds] : diarizer.stage_times().entries()) {
      EXPECT_GE(seconds, 0.0) << stage;
      result.push_back(stage);
    }
    return result;
  };
  const std::vector<std::string> expected{"model", "clustering", "aggregation"};
  EXPECT_EQ(names(), expected);
  const double after_one = diarizer.stage_times().total();
  diarizer.push(std::vector<float>(16000, 0.2F));
  EXPECT_EQ(names(), expected);
  EXPECT_GT(diarizer.stage_times().total(), after_one);
}

TEST(StreamDiarizer, ResampledInputDoesNotDependOnChunkSizes) {
  const StreamModels models(std::make_unique<LevelModel>());
  StreamConfig config;
  config.sample_rate = 8000.0;
  config.latency_seconds = 1.0;
  const std::vector<float> audio = conversation(30.0, 2, 8000.0);
  const StreamRun whole = stream_in_chunks(models, config, audio, {audio.size()});
  ASSERT_GT(whole.events.size(), 4U);
  expect_same_events(whole.events, stream_in_chunks(models, config, audio, {3, 1000, 4097}).events);
}

TEST(StreamDiarizer, FinalLabelsComeAfterTheLatencyAndNeverChange) {
  const StreamModels models(std::make_unique<LevelModel>());
  for (const double latency : {0.5, 2.0, 5.0}) {
    StreamConfig config;
    config.latency_seconds = latency;
    const std::vector<float> audio = conversation(60.0, 3, 16000.0, 7);
    const StreamRun run = stream_in_chunks(models, config, audio, {4000});
    const double duration = 60.0;
    std::map<std::string, double> open;
    std::vector<Turn> ended;
    for (const StreamEvent& e : run.events) {
      ASSERT_NE(e.kind, StreamEvent::Kind::kTurnUpdate);
      const double decisive = e.kind == StreamEvent::Kind::kTurnStart ? e.start : e.end;
      // Made once the audio is `latency` past the decisive frame (or when the stream ends).
      if (e.audio_time < duration) {
        EXPECT_GE(e.audio_time + 1e-9, decisive + latency) << e.to_json();
      }
      if (e.kind == StreamEvent::Kind::kTurnStart) {
        EXPECT_FALSE(open.contains(e.speaker)) << e.to_json();
        open[e.speaker] = e.start;
      } else {
        ASSERT_TRUE(open.contains(e.speaker)) << e.to_json();
        EXPECT_EQ(open[e.speaker], e.start);  // the start given earlier still holds
        open.erase(e.speaker);
        ended.push_back({e.start, e.end, e.speaker});
      }
    }
    EXPECT_TRUE(open.empty());
    // The final result is exactly the events' turns: nothing was relabelled afterwards.
    ASSERT_EQ(run.result.turns.size(), ended.size());
    std::sort(ended.begin(), ended.end(),
              [](const Turn& a, const Turn& b) { return a.start < b.start; });
    for (std::size_t i = 0; i < ended.size(); ++i) {
      EXPECT_EQ(run.result.turns[i].start, ended[i].start);
      EXPECT_EQ(run.result.turns[i].end, ended[i].end);
      EXPECT_EQ(run.result.turns[i].speaker, ended[i].speaker);
    }
  }
}

TEST(StreamDiarizer, FindsTheSyntheticSpeakersWithStableLabels) {
  const StreamModels models(std::make_unique<LevelModel>());
  const std::vector<float> audio = conversation(90.0, 3, 16000.0, 3);
  const StreamRun run = stream_in_chunks(models, StreamConfig{}, audio, {16000});
  EXPECT_EQ(run.result.speaker_count, 3U);
  // Every turn's label stands for one true speaker throughout.
  std::map<std::string, int> truth;
  for (const Turn& t : run.result.turns) {
    const double middle = 0.5 * (t.start + t.end);
    const int who =
        static_cast<int>(std::lround(audio[static_cast<std::size_t>(middle * 16000)] * 10));
    if (t.duration() < 1.0) continue;  // edges of turns
    auto [it, inserted] = truth.emplace(t.speaker, who);
    EXPECT_EQ(it->second, who) << t.speaker << " at " << t.start;
  }
  EXPECT_EQ(truth.size(), 3U);
}

TEST(StreamDiarizer, MemoryStaysFlatOverThreeHours) {
  const StreamModels models(std::make_unique<LevelModel>());
  StreamDiarizer diarizer(models, StreamConfig{});
  const std::vector<float> minute = conversation(60.0, 4, 16000.0, 11);
  StreamState after_3_minutes;
  std::size_t events = 0;
  for (int m = 1; m <= 180; ++m) {
    diarizer.push(minute);
    events += diarizer.take_events().size();
    if (m == 3) after_3_minutes = diarizer.state();
  }
  const StreamState after_3_hours = diarizer.state();
  EXPECT_EQ(after_3_hours.steps, 180U * 120U);
  EXPECT_GT(events, 1000U);
  EXPECT_EQ(after_3_hours.buffered_samples, after_3_minutes.buffered_samples);
  EXPECT_LE(after_3_hours.buffered_frames, after_3_minutes.buffered_frames + 40);
  EXPECT_EQ(after_3_hours.speakers, 4U);
  EXPECT_LE(after_3_hours.working_bytes, after_3_minutes.working_bytes + 4096)
      << after_3_minutes.working_bytes;
  // Finished turns are the only growth: a few dozen bytes each.
  EXPECT_GT(after_3_hours.finished_turns, 50 * after_3_minutes.finished_turns);
}

TEST(StreamDiarizer, InterleavedAndInt16InputDownmix) {
  const StreamModels models(std::make_unique<LevelModel>());
  const std::vector<float> audio = conversation(20.0, 2);
  std::vector<float> stereo;
  std::vector<std::int16_t> pcm;
  for (float v : audio) {
    stereo.insert(stereo.end(), {v, v});
    pcm.push_back(static_cast<std::int16_t>(std::lround(v * 32768.0F)));
  }
  StreamDiarizer mono(models, {}), two(models, {}), int16(models, {});
  mono.push(audio);
  two.push_interleaved(stereo, 2);
  int16.push_int16(pcm, 1);
  const auto a = mono.finish().turns, b = two.finish().turns, c = int16.finish().turns;
  ASSERT_EQ(a.size(), b.size());
  ASSERT_EQ(a.size(), c.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].start, b[i].start);
    EXPECT_EQ(a[i].start, c[i].start);
    EXPECT_EQ(a[i].speaker, c[i].speaker);
  }
}

TEST(StreamDiarizer, CallbackGetsTheEventsInsteadOfTheQueue) {
  const StreamModels models(std::make_unique<LevelModel>());
  StreamDiarizer diarizer(models, {});
  std::vector<std::string> lines;
  diarizer.set_event_callback([&](const StreamEvent& e) { lines.push_back(e.to_json()); });
  diarizer.push(conversation(20.0, 2));
  diarizer.finish();
  EXPECT_TRUE(diarizer.take_events().empty());
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.front().rfind(R"({"type":"turn_start","speaker":"SPEAKER_00","start":)", 0), 0U)
      << lines.front();
}

// LevelModel whose analysis takes a known time, as a real network's does.
class SlowLevelModel : public LevelModel {
 public:
  static constexpr std::chrono::milliseconds kAnalysis{40};
  explicit SlowLevelModel(std::chrono::milliseconds analysis = kAnalysis) : analysis_(analysis) {}
  WindowAnalysis analyze(std::span<const float> window) const override {
    std::this_thread::sleep_for(analysis_);
    return LevelModel::analyze(window);
  }

 private:
  std::chrono::milliseconds analysis_;
};

TEST(StreamDiarizer, LatencyCountsTheComputeOfTheStepThatMadeTheEvent) {
  const StreamModels models(std::make_unique<SlowLevelModel>());
  StreamConfig config;
  config.latency_seconds = 0.5;
  StreamDiarizer diarizer(models, config);
  const std::vector<float> audio = conversation(12.0, 2);
  std::vector<StreamEvent> events;
  // 4 s a push: most events are made in the push their audio came with, after a few steps.
  for (std::size_t at = 0; at < audio.size(); at += 64000) {
    diarizer.push(
        std::span<const float>(audio).subspan(at, std::min<std::size_t>(64000, audio.size() - at)));
    for (StreamEvent& e : diarizer.take_events()) events.push_back(std::move(e));
  }
  ASSERT_GT(events.size(), 2U);
  // Every event was made after a 40 ms analysis that began after its audio arrived.
  const double floor = std::chrono::duration<double>(SlowLevelModel::kAnalysis).count();
  for (const StreamEvent& e : events) EXPECT_GE(e.latency_seconds, floor) << e.to_json();
}

TEST(StreamDiarizer, StatedArrivalCountsAudioThatWaitedBeforeThePush) {
  const StreamModels models(std::make_unique<LevelModel>());
  const std::vector<float> audio = conversation(30.0, 3);
  // The same audio, pushed late: its arrival stated 10 s back, in blocks stamped at their ends as
  // a paced feeder stamps them.
  const StreamClock::time_point start = StreamClock::now() - std::chrono::seconds(40);
  StreamDiarizer late(models, StreamConfig{}), now(models, StreamConfig{});
  std::vector<StreamEvent> late_events, now_events;
  for (std::size_t at = 0; at < audio.size(); at += 320) {
    const std::size_t n = std::min<std::size_t>(320, audio.size() - at);
    const auto arrival =
        start + std::chrono::duration_cast<StreamClock::duration>(
                    std::chrono::duration<double>(static_cast<double>(at + n) / 16000.0));
    late.push(std::span<const float>(audio).subspan(at, n), arrival);
    now.push(std::span<const float>(audio).subspan(at, n));
    for (StreamEvent& e : late.take_events()) late_events.push_back(std::move(e));
    for (StreamEvent& e : now.take_events()) now_events.push_back(std::move(e));
  }
  ASSERT_GT(late_events.size(), 4U);
  // The stated arrivals are 10 s or more in the past (the audio's 30 s ended 10 s ago); without
  // them, the audio counts as arriving at the push.
  for (const StreamEvent& e : late_events) EXPECT_GE(e.latency_seconds, 10.0) << e.to_json();
  for (const StreamEvent& e : now_events) EXPECT_LT(e.latency_seconds, 5.0) << e.to_json();
  expect_same_events(late_events, now_events);
}

// One voice, a 12 s pause (no 10 s window holds two voices), the next voice, and so on.
std::vector<float> voices_apart(int voices) {
  std::vector<float> audio;
  for (int v = 1; v <= voices; ++v) {
    audio.insert(audio.end(), 15 * 16000, 0.1F * static_cast<float>(v));
    audio.insert(audio.end(), 12 * 16000, 0.0F);
  }
  return audio;
}

TEST(StreamDiarizer, MaxSpeakersCapsTheSpeakersCreated) {
  const StreamModels models(std::make_unique<LevelModel>());
  const std::vector<float> audio = voices_apart(3);
  StreamConfig config;
  EXPECT_EQ(stream_in_chunks(models, config, audio, {16000}).result.speaker_count, 3U);
  config.max_speakers = 2;
  const StreamRun capped = stream_in_chunks(models, config, audio, {16000});
  EXPECT_EQ(capped.result.speaker_count, 2U);
  // The third voice went to a known speaker: it is still found, under an existing label.
  for (const StreamEvent& e : capped.events) {
    EXPECT_TRUE(e.speaker == "SPEAKER_00" || e.speaker == "SPEAKER_01") << e.to_json();
  }
  double last_end = 0.0;
  for (const Turn& t : capped.result.turns) last_end = std::max(last_end, t.end);
  EXPECT_GT(last_end, 2 * 27.0 + 14.0);
}

// Seconds of the turns of `run` that overlap [start, end).
double found_in(const StreamRun& run, double start, double end) {
  double seconds = 0.0;
  for (const Turn& t : run.result.turns) {
    seconds += std::max(0.0, std::min(end, t.end) - std::max(start, t.start));
  }
  return seconds;
}

// Sparse speech is active in no window for min_update_activity of it: it must still be found,
// whether no speaker exists yet or every known speaker is already in the window.
TEST(StreamDiarizer, SparseSpeechIsNotDropped) {
  const StreamModels models(std::make_unique<LevelModel>());
  const StreamConfig config;
  // One voice, 1 s every 5 s after the first window: at most 2 s of any 10 s window.
  std::vector<float> alone(32 * 16000, 0.0F);
  for (int at : {12, 17, 22, 27}) {
    std::fill_n(alone.begin() + at * 16000, 16000, 0.1F);
  }
  const StreamRun lone = stream_in_chunks(models, config, alone, {16000});
  EXPECT_EQ(lone.result.speaker_count, 1U);
  for (int at : {12, 17, 22, 27}) {
    EXPECT_GT(found_in(lone, at, at + 1.0), 0.8) << "utterance at " << at << " s";
  }

  // A long voice throughout, with 1 s of a second voice every 5 s after its first 15 s.
  std::vector<float> beside(40 * 16000, 0.1F);
  for (int at : {15, 20, 25, 30, 35}) {
    std::fill_n(beside.begin() + at * 16000, 16000, 0.2F);
  }
  const StreamRun both = stream_in_chunks(models, config, beside, {16000});
  EXPECT_EQ(both.result.speaker_count, 2U);
  for (int at : {15, 20, 25, 30, 35}) {
    double second = 0.0;
    for (const Turn& t : both.result.turns) {
      if (t.speaker != "SPEAKER_01") continue;
      second += std::max(0.0, std::min(at + 1.0, t.end) - std::max<double>(at, t.start));
    }
    EXPECT_GT(second, 0.8) << "second voice at " << at << " s";
  }
}

// LevelModel, but a voice at level 0.9 is heard only by the window whose last step holds it:
// a blip of segmentation that one window reports and the ~20 others covering its frames do not.
class BlipModel : public LevelModel {
 public:
  WindowAnalysis analyze(std::span<const float> window) const override {
    std::vector<float> heard(window.begin(), window.end());
    for (std::size_t i = 0; i + 8000 < heard.size(); ++i) {
      if (heard[i] > 0.85F) heard[i] = 0.0F;
    }
    return LevelModel::analyze(heard);
  }
};

// A blip founds a speaker (no known speaker is free in its window) whose frames never reach
// final activity: that speaker must not be reported, and the labels stay 00, 01, ... each with
// turns, in the events (final and provisional) and in the result.
TEST(StreamDiarizer, EveryReportedSpeakerHasATurn) {
  const StreamModels models(std::make_unique<BlipModel>());
  // Voice 1 for 35 s with 0.2 s of the blip inside it at 30.1 s (within one step), silence, then
  // voice 2 from 40 to 60 s.
  std::vector<float> audio(60 * 16000, 0.0F);
  std::fill_n(audio.begin(), 35 * 16000, 0.1F);
  std::fill_n(audio.begin() + 30 * 16000 + 1600, 3200, 0.9F);
  std::fill_n(audio.begin() + 40 * 16000, 20 * 16000, 0.2F);
  for (const bool provisional : {false, true}) {
    StreamConfig config;
    config.provisional = provisional;
    // Voice 2 founds its own speaker from its first window (its first 0.5 s, 29 frames, fill
    // 4 % of it), rather than lending its start to the blip's speaker as a short voice would;
    // the blip (12 frames) stays short.
    config.min_update_activity = 0.04;
    StreamDiarizer diarizer(models, config);
    std::vector<StreamEvent> events;
    for (std::size_t at = 0; at < audio.size(); at += 16000) {
      diarizer.push(std::span<const float>(audio).subspan(at, 16000));
      for (StreamEvent& e : diarizer.take_events()) events.push_back(std::move(e));
    }
    // The blip did found a speaker: three centroids for two voices.
    ASSERT_EQ(diarizer.state().speakers, 3U);
    const pipeline::DiarizationResult result = diarizer.finish();
    for (StreamEvent& e : diarizer.take_events()) events.push_back(std::move(e));

    EXPECT_EQ(result.speaker_count, 2U);
    EXPECT_EQ(result.speaker_embeddings.dim(0), 2U);
    std::map<std::string, int> starts, turns;
    for (const StreamEvent& e : events) {
      if (e.kind == StreamEvent::Kind::kTurnStart) ++starts[e.speaker];
      // A label appears in an update only once its first turn start is final; before, the voice
      // shows without one.
      if (e.kind == StreamEvent::Kind::kTurnUpdate && !e.speaker.empty()) {
        EXPECT_TRUE(starts.count(e.speaker))
            << "label before its speaker's first turn: " << e.to_json();
      }
    }
    for (const Turn& t : result.turns) ++turns[t.speaker];
    const auto labels = [](const std::map<std::string, int>& counts) {
      std::vector<std::string> names;
      for (const auto& [name, count] : counts) names.push_back(name);
      return names;
    };
    const std::vector<std::string> expected{"SPEAKER_00", "SPEAKER_01"};
    EXPECT_EQ(labels(starts), expected) << "provisional " << provisional;
    EXPECT_EQ(labels(turns), expected) << "provisional " << provisional;
    for (const Turn& t : result.exclusive_turns) EXPECT_TRUE(turns.count(t.speaker)) << t.speaker;
    // The second voice, the second speaker to talk, is SPEAKER_01 (not the blip's number).
    EXPECT_GT(found_in({events, result}, 41.0, 59.0), 17.0);
    for (const Turn& t : result.turns) {
      EXPECT_EQ(t.speaker, t.start < 38.0 ? "SPEAKER_00" : "SPEAKER_01") << t.start;
      EXPECT_EQ(t.speaker_index, t.start < 38.0 ? 0 : 1);
    }
  }
}

TEST(StreamDiarizer, MatchThresholdDecidesBetweenANewSpeakerAndAMatch) {
  const StreamModels models(std::make_unique<LevelModel>());
  // The fake's voices are near-orthogonal: cosine distance about 1 between two voices, a few
  // hundredths between windows of one voice.
  const std::vector<float> audio = voices_apart(2);
  StreamConfig config;
  config.match_threshold = 0.7;  // under 1: the second voice is new
  EXPECT_EQ(stream_in_chunks(models, config, audio, {16000}).result.speaker_count, 2U);
  config.match_threshold = 1.5;  // over 1: the second voice matches the first speaker
  const StreamRun matched = stream_in_chunks(models, config, audio, {16000});
  EXPECT_EQ(matched.result.speaker_count, 1U);
  double last_end = 0.0;
  for (const Turn& t : matched.result.turns) {
    EXPECT_EQ(t.speaker, "SPEAKER_00");
    last_end = std::max(last_end, t.end);
  }
  EXPECT_GT(last_end, 27.0 + 14.0);
}

TEST(StreamDiarizer, StreamsOnOneModelSetInThreadsGiveTheirOwnEvents) {
  // A little time in the model, so that the threads' steps interleave.
  const StreamModels models(std::make_unique<SlowLevelModel>(std::chrono::milliseconds(2)));
  StreamConfig config;
  config.provisional = true;
  std::vector<std::vector<float>> audios;
  for (unsigned seed = 1; seed <= 4; ++seed) {
    audios.push_back(conversation(20.0, 2 + static_cast<int>(seed % 3), 16000.0, seed));
  }
  std::vector<StreamRun> alone;
  for (const auto& audio : audios) alone.push_back(stream_in_chunks(models, config, audio, {4000}));
  std::vector<StreamRun> together(audios.size());
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < audios.size(); ++i) {
    threads.emplace_back(
        [&, i] { together[i] = stream_in_chunks(models, config, audios[i], {1000 + 777 * i}); });
  }
  for (std::thread& t : threads) t.join();
  for (std::size_t i = 0; i < audios.size(); ++i) {
    SCOPED_TRACE(i);
    expect_same_events(alone[i].events, together[i].events);
  }
}

// LevelModel whose call number `fail_at` (from 1) throws, as a network out of memory would.
class FlakyLevelModel : public LevelModel {
 public:
  explicit FlakyLevelModel(std::size_t fail_at) : fail_at_(fail_at) {}
  WindowAnalysis analyze(std::span<const float> window) const override {
    if (++calls_ == fail_at_) fail("fake model: out of memory");
    return LevelModel::analyze(window);
  }

 private:
  std::size_t fail_at_;
  mutable std::atomic<std::size_t> calls_{0};
};

// A model call that fails leaves the stream as it was: the caller goes on with the next samples
// (or none, or finish()) and gets the events and result of a stream that never failed, neither
// audio lost nor audio doubled.
TEST(StreamDiarizer, AFailedModelCallIsRunAgainWithoutLosingOrRepeatingAudio) {
  const StreamModels clean(std::make_unique<LevelModel>());
  StreamConfig config;
  config.provisional = true;
  // 45.25 s: 90 whole steps and a partial one, which finish() runs.
  const std::vector<float> audio = conversation(45.25, 3, 16000.0, 4);
  const StreamRun expected = stream_in_chunks(clean, config, audio, {4000});
  ASSERT_GT(expected.events.size(), 10U);
  struct Case {
    std::size_t fail_at;  // model call that throws
    std::size_t chunk;    // samples a push
    bool retry_empty;     // after the error, an empty push first
  };
  // A quarter step a push; three steps a push failing at a push's second step (the samples after
  // it wait too); an empty push retrying; the partial step in finish() failing.
  for (const Case c : {Case{30, 4000, false}, Case{32, 24000, false}, Case{57, 8000, true},
                       Case{91, 16000, false}}) {
    SCOPED_TRACE(::testing::Message() << "fail at " << c.fail_at << ", pushes of " << c.chunk);
    const StreamModels flaky(std::make_unique<FlakyLevelModel>(c.fail_at));
    StreamDiarizer diarizer(flaky, config);
    StreamRun run;
    std::size_t failures = 0;
    for (std::size_t at = 0; at < audio.size(); at += c.chunk) {
      const std::size_t n = std::min(c.chunk, audio.size() - at);
      try {
        diarizer.push(std::span<const float>(audio).subspan(at, n));
      } catch (const Error& error) {
        ++failures;
        EXPECT_NE(std::string(error.what()).find("out of memory"), std::string::npos);
        if (c.retry_empty) diarizer.push({});
      }
      for (StreamEvent& e : diarizer.take_events()) run.events.push_back(std::move(e));
    }
    try {
      run.result = diarizer.finish();
    } catch (const Error&) {
      ++failures;
      run.result = diarizer.finish();
    }
    for (StreamEvent& e : diarizer.take_events()) run.events.push_back(std::move(e));
    EXPECT_EQ(failures, 1U);
    expect_same_events(expected.events, run.events);
    ASSERT_EQ(run.result.turns.size(), expected.result.turns.size());
    for (std::size_t i = 0; i < run.result.turns.size(); ++i) {
      EXPECT_EQ(run.result.turns[i].start, expected.result.turns[i].start);
      EXPECT_EQ(run.result.turns[i].end, expected.result.turns[i].end);
      EXPECT_EQ(run.result.turns[i].speaker, expected.result.turns[i].speaker);
    }
    EXPECT_EQ(run.result.duration_seconds, expected.result.duration_seconds);
    EXPECT_THROW(diarizer.push(std::span<const float>(audio).first(10)), Error);
  }
}

// Provisional updates show every voice active among the frames not final yet, a voice not named
// yet too (no label, its candidate number): a new speaker shows before its first final turn,
// and its name, once given, goes with the same candidate for good.
TEST(StreamDiarizer, ProvisionalUpdatesShowNewVoicesBeforeTheirNames) {
  const StreamModels models(std::make_unique<LevelModel>());
  for (const double latency : {0.5, 2.0}) {
    SCOPED_TRACE(latency);
    StreamConfig config;
    config.provisional = true;
    config.latency_seconds = latency;
    const StreamRun run =
        stream_in_chunks(models, config, conversation(60.0, 3, 16000.0, 5), {4000});
    std::map<std::size_t, std::string> name_of;       // candidate -> label
    std::map<std::string, std::size_t> candidate_of;  // label -> candidate
    std::map<std::size_t, double> shown_unnamed;      // candidate -> first unnamed update's time
    std::map<std::string, double> first_start;        // label -> first turn_start's time
    for (const StreamEvent& e : run.events) {
      if (e.kind == StreamEvent::Kind::kTurnStart) first_start.emplace(e.speaker, e.audio_time);
      if (e.kind != StreamEvent::Kind::kTurnUpdate) {
        EXPECT_FALSE(e.candidate) << e.to_json();
        continue;
      }
      ASSERT_TRUE(e.candidate) << e.to_json();
      // Within the frames not final yet: those whose middle is past the audio less the latency.
      EXPECT_GT(e.start, e.audio_time - latency) << e.to_json();
      EXPECT_LE(e.start, e.end) << e.to_json();
      EXPECT_LE(e.end, e.audio_time) << e.to_json();
      if (e.speaker.empty()) {
        EXPECT_FALSE(name_of.contains(*e.candidate)) << "unnamed again: " << e.to_json();
        EXPECT_NE(e.to_json().find(R"("speaker":null,"candidate":)"), std::string::npos);
        shown_unnamed.emplace(*e.candidate, e.audio_time);
      } else {
        EXPECT_TRUE(first_start.contains(e.speaker)) << "named before its turn: " << e.to_json();
        EXPECT_EQ(name_of.emplace(*e.candidate, e.speaker).first->second, e.speaker);
        EXPECT_EQ(candidate_of.emplace(e.speaker, *e.candidate).first->second, *e.candidate);
      }
    }
    ASSERT_EQ(first_start.size(), 3U);
    for (const auto& [label, when] : first_start) {
      ASSERT_TRUE(candidate_of.contains(label)) << label;
      const std::size_t c = candidate_of[label];
      ASSERT_TRUE(shown_unnamed.contains(c)) << label << " never shown before its name";
      EXPECT_LT(shown_unnamed[c], when) << label;
    }
  }
}

// One voice whose embedding turns slowly, by 2 radians over the stream: the last sample's level
// (0.1 to 0.9) sets its angle between two axes.
class DriftingVoiceModel : public WindowModel {
 public:
  static constexpr double kTurn = 2.0;
  WindowAnalysis analyze(std::span<const float> window) const override {
    NdArray<float> segmentation({589, 3});
    for (std::size_t f = 0; f < 589; ++f) {
      if (window[std::min(window.size() - 1, f * 270 + 495)] > 0.05F) segmentation(f, 0) = 1.0F;
    }
    NdArray<float> embeddings({3, 16}, std::nanf(""));
    const double angle = (static_cast<double>(window.back()) - 0.1) / 0.8 * kTurn;
    for (std::size_t d = 0; d < 16; ++d) embeddings(0, d) = 0.0F;
    embeddings(0, 0) = static_cast<float>(std::cos(angle));
    embeddings(0, 1) = static_cast<float>(std::sin(angle));
    return {std::move(segmentation), std::move(embeddings)};
  }
};

// Only centroids that move with their speaker keep a drifting voice one speaker: its last
// embeddings are 1 - cos(2) = 1.42 from its first (past the match threshold), but about
// 1 - cos(1) = 0.46 from the sum of all of them.
TEST(StreamDiarizer, CentroidsFollowAVoiceThatDrifts) {
  const StreamModels models(std::make_unique<DriftingVoiceModel>());
  const StreamConfig config;
  ASSERT_GT(1.0 - std::cos(DriftingVoiceModel::kTurn), 1.5 * config.match_threshold);
  std::vector<float> audio(120 * 16000);
  for (std::size_t i = 0; i < audio.size(); ++i) {
    audio[i] = 0.1F + 0.8F * static_cast<float>(i) / static_cast<float>(audio.size());
  }
  const StreamRun run = stream_in_chunks(models, config, audio, {16000});
  EXPECT_EQ(run.result.speaker_count, 1U);
  double seconds = 0.0;
  for (const Turn& t : run.result.turns) {
    EXPECT_EQ(t.speaker, "SPEAKER_00") << t.start;
    seconds += t.duration();
  }
  EXPECT_GT(seconds, 119.0);
}

TEST(StreamDiarizer, ConfigIsValidated) {
  const StreamModels models(std::make_unique<LevelModel>());
  StreamConfig config;
  config.latency_seconds = 0.2;
  EXPECT_THROW(StreamDiarizer(models, config), Error);
  config.latency_seconds = 1.0;
  config.step_seconds = 2.0;
  EXPECT_THROW(StreamDiarizer(models, config), Error);
  config = {};
  config.final_recluster = true;  // the fake has no batch pipeline
  EXPECT_THROW(StreamDiarizer(models, config), Error);
  EXPECT_NE(StreamConfig{}.to_string().find("latency=2s"), std::string::npos);
}

// auto rolls only where every condition holds; on an accelerator (where the embedding network
// runs elsewhere than on the CPU) it keeps whole windows, whose pass has one shape.
TEST(StreamEmbeddingChoice, AutoRollsOnlyWithTheEmbeddingOnTheCpu) {
  RollingFacts all;
  all.supported = all.shared_mode = all.local_field = all.embedding_on_cpu = true;
  EXPECT_TRUE(rolling_by_default(all));
  for (bool RollingFacts::*fact : {&RollingFacts::supported, &RollingFacts::shared_mode,
                                   &RollingFacts::local_field, &RollingFacts::embedding_on_cpu}) {
    RollingFacts one_missing = all;
    one_missing.*fact = false;
    EXPECT_FALSE(rolling_by_default(one_missing));
  }
}

}  // namespace
}  // namespace parley::stream
