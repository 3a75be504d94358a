#include "corpus/corpus_engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "audio/mono_resampled_stream.h"
#include "core/heap.h"
#include "eval/rttm.h"
#include "frames/output.h"
#include "graph/embedding_model_test_support.h"
#include "testing/shared_data.h"
#include "testing/temporary_directory.h"

namespace parley::corpus {
namespace {

std::string rttm_of(const pipeline::DiarizationResult& result) {
  return eval::format_rttm(frames::to_eval_turns(result.turns, result.uri));
}

// The real segmentation model and a tiny embedding network of WeSpeaker's pooling structure
// (labels are meaningless, every stage runs), over real recordings from ../shared/eval.
class CorpusEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PARLEY_REQUIRE_SHARED(segmentation, "models/segmentation-3.0-fp16.onnx");
    PARLEY_REQUIRE_SHARED(ami, "eval/ami-debug");
    directory_ = std::make_unique<testing::TemporaryDirectory>("corpus");
    const auto embedding = *directory_ / "embedding.onnx";
    std::ofstream(embedding, std::ios::binary) << graph::testing::make_test_embedding_model();
    models_ = {segmentation, embedding, std::filesystem::path()};
    for (const auto& entry : std::filesystem::directory_iterator(ami)) {
      if (entry.path().extension() == ".wav") inputs_.push_back({entry.path(), "", {}, {}});
    }
    std::sort(inputs_.begin(), inputs_.end(),
              [](const auto& a, const auto& b) { return a.audio < b.audio; });
    inputs_.resize(std::min<std::size_t>(inputs_.size(), 5));
    PARLEY_REQUIRE_SHARED(sample, "eval/pyannote-sample/sample.wav");
    PARLEY_REQUIRE_SHARED(falcon, "eval/falcon-test/test.wav");
    inputs_.push_back({sample, "", {}, {}});
    inputs_.push_back({falcon, "", {}, {}});
    for (std::size_t i = 0; i < inputs_.size(); ++i) inputs_[i].uri = "rec" + std::to_string(i);
  }

  pipeline::DiarizationConfig config(int threads, double step_seconds = 1.0) const {
    pipeline::DiarizationConfig config;
    config.threads = threads;
    config.step_seconds = step_seconds;
    config.clustering.method = cluster::ClusteringMethod::kAhc;
    return config;
  }

  // Every input diarized alone by one Diarizer: what the corpus must reproduce.
  std::vector<std::string> alone(double step_seconds = 1.0) const {
    pipeline::Diarizer diarizer(models_, config(1, step_seconds));
    Progress quiet(Progress::Mode::kNever);
    std::vector<std::string> rttms;
    for (const auto& input : inputs_) {
      const auto samples = audio::load_mono_16k(input.audio);
      rttms.push_back(rttm_of(diarizer.diarize(samples, input.uri, quiet)));
    }
    return rttms;
  }

  // Runs the corpus and returns each index's outcome, checking each is reported once.
  std::map<std::size_t, RecordingOutcome> run(CorpusEngine& engine,
                                              const std::vector<CorpusRecording>& inputs) {
    std::map<std::size_t, RecordingOutcome> outcomes;
    std::mutex mutex;
    engine.run(inputs, [&](RecordingOutcome outcome) {
      std::lock_guard lock(mutex);
      const std::size_t index = outcome.index;
      EXPECT_TRUE(outcomes.emplace(index, std::move(outcome)).second) << "reported twice";
    });
    return outcomes;
  }

  std::unique_ptr<testing::TemporaryDirectory> directory_;
  pipeline::DiarizationModels models_;
  std::vector<CorpusRecording> inputs_;
};

// One engine per 16 GiB of free device memory, at most three; one when the memory is unknown.
TEST(AutomaticEngines, FollowTheFreeDeviceMemory) {
  constexpr std::uintmax_t kGiB = std::uintmax_t{1} << 30;
  EXPECT_EQ(automatic_engines_per_device(std::nullopt), 1);
  EXPECT_EQ(automatic_engines_per_device(runtime::DeviceMemory{80 * kGiB, 78 * kGiB, "test"}), 3);
  EXPECT_EQ(automatic_engines_per_device(runtime::DeviceMemory{24 * kGiB, 23 * kGiB, "test"}), 1);
  EXPECT_EQ(automatic_engines_per_device(runtime::DeviceMemory{40 * kGiB, 38 * kGiB, "test"}), 2);
  EXPECT_EQ(automatic_engines_per_device(runtime::DeviceMemory{8 * kGiB, 2 * kGiB, "test"}), 1);
}

TEST(AutomaticEngines, SeveralShareAGpuWithFewerLargerSegmentationCalls) {
  pipeline::DiarizationConfig config;
  use_several_engines_layout(config);
  EXPECT_EQ(config.segmentation_accelerator_sessions, kSeveralEnginesSegmentationSessions);
  ASSERT_TRUE(config.placement.has_value());
  EXPECT_EQ(config.placement->accelerator_segmentation_batch_size,
            kSeveralEnginesSegmentationBatch);
  pipeline::ProviderPlacement routed;
  routed.options = {{"device_id", "1"}};
  config.placement = routed;
  use_several_engines_layout(config);
  EXPECT_EQ(config.placement->options.at("device_id"), "1") << "the rest of the placement stays";
}

TEST_F(CorpusEngineTest, SeveralRecordingsInOneStreamEqualEachAlone) {
  pipeline::Diarizer diarizer(models_, config(2));
  Progress quiet(Progress::Mode::kNever);
  std::vector<std::vector<float>> samples;
  for (const auto& input : inputs_) samples.push_back(audio::load_mono_16k(input.audio));
  std::vector<std::span<const float>> recordings(samples.begin(), samples.end());
  std::vector<StageTimes> times;
  const auto together = diarizer.segment_and_embed(recordings, times, quiet);
  ASSERT_EQ(together.size(), samples.size());
  ASSERT_EQ(times.size(), samples.size());
  for (std::size_t i = 0; i < samples.size(); ++i) {
    SCOPED_TRACE(inputs_[i].audio.string());
    std::vector<StageTimes> alone_times;
    const std::span<const float> one[] = {samples[i]};
    const auto alone = diarizer.segment_and_embed(one, alone_times, quiet);
    EXPECT_EQ(together[i].duration_seconds, alone[0].duration_seconds);
    EXPECT_EQ(together[i].segmentations.shape(), alone[0].segmentations.shape());
    EXPECT_TRUE(std::equal(together[i].segmentations.values().begin(),
                           together[i].segmentations.values().end(),
                           alone[0].segmentations.values().begin()));
    EXPECT_TRUE(std::equal(together[i].embeddings.values().begin(),
                           together[i].embeddings.values().end(),
                           alone[0].embeddings.values().begin()));
    EXPECT_GT(times[i].total(), 0.0);
  }
}

TEST_F(CorpusEngineTest, SameRttmForAnyThreadsGroupingAndEngines) {
  const std::vector<std::string> expected = alone();
  struct Setup {
    int threads;
    int decode_threads;
    int clustering_threads;
    std::size_t group_chunks;
    int engines;
  };
  for (const Setup setup : {Setup{1, 1, 1, 1, 1}, Setup{2, 3, 2, 100000, 1}, Setup{1, 2, 1, 200, 2},
                            Setup{1, 2, 2, 200, 4}}) {
    SCOPED_TRACE(::testing::Message()
                 << "threads " << setup.threads << ", decoders " << setup.decode_threads
                 << ", group " << setup.group_chunks << ", engines " << setup.engines);
    CorpusConfig corpus;
    corpus.decode_threads = setup.decode_threads;
    corpus.clustering_threads = setup.clustering_threads;
    corpus.decoded_per_engine = 3;
    corpus.group_chunks = setup.group_chunks;
    CorpusEngine engine(models_, engine_configs(config(setup.threads), {}, setup.engines), corpus);
    EXPECT_EQ(engine.engine_count(), static_cast<std::size_t>(setup.engines));
    const auto outcomes = run(engine, inputs_);
    ASSERT_EQ(outcomes.size(), inputs_.size());
    std::size_t grouped = 0;
    for (const auto& [index, outcome] : outcomes) {
      ASSERT_TRUE(outcome.ok()) << outcome.error;
      EXPECT_EQ(rttm_of(*outcome.result), expected[index]) << inputs_[index].audio;
      EXPECT_EQ(outcome.result->stage_times.entries().front().first, "decode");
      EXPECT_GE(outcome.wall_seconds, outcome.decode_seconds);
      if (outcome.group_size > 1) ++grouped;
    }
    std::printf("%zu of %zu recordings shared model calls\n", grouped, outcomes.size());
  }
}

// At a 2 s step a recording makes half the chunks: an engine waits for the decoders until its
// group fills its segmentation calls (fill_chunks), whatever the queue of decoded recordings
// holds, and each recording's RTTM is still the one it gets alone.
TEST_F(CorpusEngineTest, GroupsFillToTheirChunksAtAnyStepWithTheSameRttms) {
  const std::vector<std::string> expected = alone(2.0);
  {
    const pipeline::Diarizer cpu(models_, config(1, 2.0));
    EXPECT_EQ(cpu.segmentation_chunks_in_flight(), 0u) << "the CPU's batches need no filling";
  }
  struct Setup {
    std::optional<std::size_t> fill_chunks;
    int engines;
  };
  for (const Setup setup : {Setup{100000, 1}, Setup{0, 1}, Setup{300, 2}, Setup{std::nullopt, 2}}) {
    SCOPED_TRACE(::testing::Message()
                 << "fill " << (setup.fill_chunks ? std::to_string(*setup.fill_chunks) : "auto")
                 << ", engines " << setup.engines);
    CorpusConfig corpus;
    corpus.decode_threads = 1;
    corpus.decoded_per_engine = 1;  // without waiting, a group takes at most one more
    corpus.group_chunks = 100000;
    corpus.fill_chunks = setup.fill_chunks;
    CorpusEngine engine(models_, engine_configs(config(1, 2.0), {}, setup.engines), corpus);
    const auto outcomes = run(engine, inputs_);
    ASSERT_EQ(outcomes.size(), inputs_.size());
    for (const auto& [index, outcome] : outcomes) {
      ASSERT_TRUE(outcome.ok()) << outcome.error;
      EXPECT_EQ(rttm_of(*outcome.result), expected[index]) << inputs_[index].audio;
      if (setup.fill_chunks == 100000u) {
        EXPECT_EQ(outcome.group_size, inputs_.size()) << "one engine waits for every recording";
      }
    }
  }
}

TEST_F(CorpusEngineTest, BadRecordingsFailAloneWithTheirMessage) {
  const auto garbage = *directory_ / "not-audio.wav";
  std::ofstream(garbage) << "this is not a recording\n";
  std::vector<CorpusRecording> inputs = {inputs_[0],
                                         {garbage, "garbage", {}, {}},
                                         inputs_[1],
                                         {*directory_ / "missing.flac", "missing", {}, {}},
                                         inputs_[2]};
  CorpusConfig corpus;
  corpus.group_chunks = 100000;
  CorpusEngine engine(models_, {config(1)}, corpus);
  const auto outcomes = run(engine, inputs);
  ASSERT_EQ(outcomes.size(), inputs.size());
  EXPECT_TRUE(outcomes.at(0).ok());
  EXPECT_TRUE(outcomes.at(2).ok());
  EXPECT_TRUE(outcomes.at(4).ok());
  ASSERT_FALSE(outcomes.at(1).ok());
  EXPECT_NE(outcomes.at(1).error.find("not-audio.wav"), std::string::npos) << outcomes.at(1).error;
  ASSERT_FALSE(outcomes.at(3).ok());
  EXPECT_NE(outcomes.at(3).error.find("missing.flac"), std::string::npos) << outcomes.at(3).error;
}

TEST_F(CorpusEngineTest, StopsTakingRecordingsWhenAsked) {
  std::atomic<bool> stop = false;
  CorpusConfig corpus;
  corpus.decode_threads = 1;
  corpus.decoded_per_engine = 1;
  corpus.group_chunks = 1;
  CorpusEngine engine(models_, {config(1)}, corpus);
  std::size_t reported = 0;
  engine.run(
      inputs_,
      [&](RecordingOutcome) {
        ++reported;
        stop = true;
      },
      &stop);
  EXPECT_GE(reported, 1u);
  EXPECT_LT(reported, inputs_.size());
}

TEST_F(CorpusEngineTest, AbandonsTheRecordingsInTheNetworksOnlyWhenConfiguredTo) {
  // The stop comes as the one recording enters the networks: it is finished and reported, or,
  // with abandon_on_stop (a library batch being freed), dropped at its first step.
  for (const bool abandon : {false, true}) {
    std::atomic<bool> stop = false;
    CorpusConfig corpus;
    corpus.abandon_on_stop = abandon;
    CorpusEngine engine(models_, {config(1)}, corpus);
    bool given = false;
    std::atomic<std::size_t> reported = 0;
    engine.run(
        [&]() -> std::optional<CorpusRecording> {
          if (given) return std::nullopt;
          given = true;
          return inputs_.front();
        },
        [&](RecordingOutcome outcome) {
          EXPECT_TRUE(outcome.ok()) << outcome.error;
          ++reported;
        },
        [&](std::size_t, std::string_view stage) {
          if (stage == "networks") stop = true;
        },
        &stop);
    EXPECT_EQ(reported.load(), abandon ? 0u : 1u) << "abandon_on_stop " << abandon;
  }
}

TEST_F(CorpusEngineTest, CallbackFailureStopsTheRunAndIsRethrown) {
  CorpusEngine engine(models_, {config(1)}, CorpusConfig{});
  EXPECT_THROW(engine.run(inputs_, [](RecordingOutcome) { fail("disk full"); }), Error);
}

// Engines are built at once, each on a thread of its own: a failure on one reaches the caller
// with its message, after every builder has finished.
TEST(CorpusEngineBuild, AnEngineThatCannotLoadFailsTheConstructionWithItsMessage) {
  const pipeline::DiarizationModels models{"/nonexistent/segmentation.onnx",
                                           "/nonexistent/embedding.onnx", std::filesystem::path()};
  pipeline::DiarizationConfig config;
  try {
    CorpusEngine engine(models, engine_configs(config, {}, 3), CorpusConfig{});
    FAIL() << "built engines without models";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("/nonexistent/"), std::string::npos) << error.what();
  }
}

TEST(EngineConfigs, OneEngineSetPerDeviceWithItsDeviceId) {
  pipeline::DiarizationConfig config;
  config.placement = pipeline::ProviderPlacement{};
  const auto configs = engine_configs(config, {0, 3}, 2);
  ASSERT_EQ(configs.size(), 4u);
  EXPECT_EQ(configs[0].placement->options.at("device_id"), "0");
  EXPECT_EQ(configs[1].placement->options.at("device_id"), "0");
  EXPECT_EQ(configs[2].placement->options.at("device_id"), "3");
  EXPECT_EQ(configs[3].embedding_provider_options.at("device_id"), "3");
  EXPECT_EQ(engine_configs(config, {}, 3).size(), 3u);
  EXPECT_THROW(engine_configs(config, {-1}, 1), Error);
  EXPECT_THROW(engine_configs(config, {0}, 0), Error);
}

TEST(EngineConfigs, EnginesPerDeviceAreBoundedWithTheReason) {
  const auto message_of = [](int engines, bool on_accelerator) -> std::string {
    try {
      check_engines_per_device(engines, on_accelerator);
    } catch (const Error& error) {
      return error.what();
    }
    return "(no error)";
  };
  EXPECT_EQ(message_of(1, false), "(no error)");
  EXPECT_EQ(message_of(3, true), "(no error)");
  // --engines 64 took 4.9 GB on a 2-core machine.
  const std::string cpu = message_of(64, false);
  EXPECT_EQ(cpu.rfind("engines_per_device must be at most", 0), 0u) << cpu;
  EXPECT_NE(cpu.find("on the CPU (got 64)"), std::string::npos) << cpu;
  EXPECT_NE(cpu.find("hardware thread"), std::string::npos) << cpu;
  const std::string gpu = message_of(64, true);
  EXPECT_NE(gpu.find("at most 8 on a GPU (got 64)"), std::string::npos) << gpu;
  EXPECT_EQ(max_engines_per_device(true), kMaxEnginesPerDevice);
  EXPECT_GE(max_engines_per_device(false), 1);
  EXPECT_LE(max_engines_per_device(false), kMaxEnginesPerDevice);
  EXPECT_NE(message_of(0, false).find("at least 1"), std::string::npos);
  pipeline::DiarizationConfig config;
  EXPECT_THROW(engine_configs(config, {0}, kMaxEnginesPerDevice + 1), Error);
  EXPECT_THROW(engine_configs(config, {}, 64), Error);
}

TEST(CorpusConfig, RecordingsDecodedAtOnceMustFitInMemory) {
  CorpusConfig config;
  config.decode_threads = kMaxStageThreads + 1;
  EXPECT_THROW(config.validate(), Error);
  config.decode_threads = kMaxStageThreads;
  const std::uintmax_t need =
      static_cast<std::uintmax_t>(kMaxStageThreads) * config.spill_samples * sizeof(float);
  const std::uintmax_t memory = memory_budget_bytes();
  if (memory > 0 && need > memory) {
    try {
      config.validate();
      FAIL() << "256 decoders of half an hour each were accepted";
    } catch (const Error& error) {
      EXPECT_NE(std::string(error.what()).find("more than this machine's"), std::string::npos)
          << error.what();
    }
  } else {
    EXPECT_NO_THROW(config.validate());
  }
}

TEST(CorpusConfig, RefusesWhatCannotRun) {
  CorpusConfig config;
  EXPECT_NO_THROW(config.validate());
  config.decode_threads = 0;
  EXPECT_THROW(config.validate(), Error);
  config = {};
  config.group_chunks = 0;
  EXPECT_THROW(config.validate(), Error);
  EXPECT_NE(CorpusConfig{}.to_string().find("decode_threads=2"), std::string::npos);
}

}  // namespace
}  // namespace parley::corpus

namespace parley::corpus {
namespace {

TEST_F(CorpusEngineTest, SourceWithSamplesInMemoryAndPerRecordingSpeakers) {
  const std::vector<std::string> expected = alone();
  CorpusEngine engine(models_, {config(1)}, CorpusConfig{});
  std::size_t given = 0;
  std::mutex mutex;
  std::map<std::size_t, std::vector<std::string>> stages;
  std::map<std::size_t, RecordingOutcome> outcomes;
  engine.run(
      [&]() -> std::optional<CorpusRecording> {
        if (given == 3) return std::nullopt;
        CorpusRecording recording = inputs_[given];
        recording.samples =
            std::make_shared<const std::vector<float>>(audio::load_mono_16k(recording.audio));
        recording.audio = "/nonexistent/not-read.wav";
        if (given == 2) recording.speakers = cluster::SpeakerCountConstraints{1, {}, {}};
        ++given;
        return recording;
      },
      [&](RecordingOutcome outcome) {
        std::lock_guard lock(mutex);
        outcomes.emplace(outcome.index, std::move(outcome));
      },
      [&](std::size_t index, std::string_view stage) {
        std::lock_guard lock(mutex);
        stages[index].emplace_back(stage);
      });
  ASSERT_EQ(outcomes.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(outcomes.at(i).ok()) << outcomes.at(i).error;
    // In memory: no decoding stage.
    EXPECT_EQ(stages[i], (std::vector<std::string>{"networks", "clustering"}));
  }
  EXPECT_EQ(rttm_of(*outcomes.at(0).result), expected[0]);
  EXPECT_EQ(rttm_of(*outcomes.at(1).result), expected[1]);
  EXPECT_LE(outcomes.at(2).result->speaker_count, 1u);
}

TEST_F(CorpusEngineTest, ASourceThatThrowsStopsTheRun) {
  CorpusEngine engine(models_, {config(1)}, CorpusConfig{});
  EXPECT_THROW(engine.run([]() -> std::optional<CorpusRecording> { fail("manifest unreadable"); },
                          [](RecordingOutcome) {}),
               Error);
}

}  // namespace
}  // namespace parley::corpus

namespace parley::corpus {
namespace {

// Where each named recording's events lie in a trace: {recording: {event: (first start, last
// end)}}, times in microseconds, asynchronous spans from their begin to their end.
using Extents = std::map<std::string, std::map<std::string, std::pair<double, double>>>;

Extents recording_extents(const nlohmann::json& trace) {
  Extents extents;
  const auto add = [&extents](const std::string& recording, const std::string& name, double start,
                              double end) {
    auto [found, added] = extents[recording].emplace(name, std::make_pair(start, end));
    if (!added) {
      found->second.first = std::min(found->second.first, start);
      found->second.second = std::max(found->second.second, end);
    }
  };
  std::map<std::string, nlohmann::json> begins;
  for (const auto& event : trace.at("traceEvents")) {
    const std::string phase = event.at("ph");
    const nlohmann::json args = event.value("args", nlohmann::json::object());
    std::vector<std::string> names;
    if (args.contains("recording")) names.push_back(args.at("recording"));
    if (args.contains("recordings")) {
      for (const auto& name : args.at("recordings")) names.push_back(name);
    }
    if (phase == "X") {
      const double start = event.at("ts");
      for (const auto& name : names)
        add(name, event.at("name"), start, start + event.at("dur").get<double>());
    } else if (phase == "b") {
      begins[event.at("id")] = event;
    } else if (phase == "e") {
      const nlohmann::json& begin = begins.at(event.at("id"));
      add(begin.at("args").at("recording"), begin.at("name"), begin.at("ts"), event.at("ts"));
    }
  }
  return extents;
}

// A corpus run writes its trace when asked: every recording's stages in order, each thread's
// events nested or one after the other, model calls on the engines' tracks; the results are
// those of the same run untraced.
TEST_F(CorpusEngineTest, TraceCoversEveryRecordingsStagesAndChangesNoResult) {
  std::vector<CorpusRecording> inputs = {inputs_[inputs_.size() - 2], inputs_.back()};
  CorpusRecording in_memory;
  in_memory.uri = "in-memory";
  in_memory.samples = std::make_shared<const std::vector<float>>(
      audio::load_mono_16k(inputs_[inputs_.size() - 2].audio));
  inputs.push_back(in_memory);
  const auto results = [&](const std::filesystem::path& trace_file) {
    CorpusConfig corpus;
    corpus.decode_threads = 2;
    corpus.clustering_threads = 2;
    corpus.trace_file = trace_file;
    CorpusEngine engine(models_, engine_configs(config(1), {}, 2), corpus);
    std::vector<std::string> rttms(inputs.size());
    for (auto& [index, outcome] : run(engine, inputs)) {
      EXPECT_TRUE(outcome.ok()) << outcome.error;
      if (outcome.ok()) rttms[index] = rttm_of(*outcome.result);
    }
    return rttms;
  };
  const auto trace_file = *directory_ / "trace.json";
  const std::vector<std::string> untraced = results({});
  EXPECT_FALSE(std::filesystem::exists(trace_file));
  EXPECT_EQ(results(trace_file), untraced);

  std::ifstream stream(trace_file);
  const nlohmann::json trace = nlohmann::json::parse(stream);
  const Extents extents = recording_extents(trace);
  const std::vector<std::string> order = {"decode",     "waiting for an engine", "networks",
                                          "clustering", "reconstruction",        "writing"};
  for (const auto& input : inputs) {
    const std::string name = input.audio.empty() ? input.uri : input.audio.string();
    SCOPED_TRACE(name);
    ASSERT_TRUE(extents.contains(name));
    const auto& events = extents.at(name);
    for (const std::string& stage : order) ASSERT_TRUE(events.contains(stage)) << stage;
    for (const std::string stage : {"segmentation call", "embedding"}) {
      ASSERT_TRUE(events.contains(stage)) << stage;
      EXPECT_GE(events.at(stage).first, events.at("networks").first) << stage;
      EXPECT_LE(events.at(stage).second, events.at("networks").second + 0.01) << stage;
    }
    for (std::size_t k = 1; k < order.size(); ++k) {
      EXPECT_LE(events.at(order[k - 1]).second, events.at(order[k]).first + 0.01)
          << order[k - 1] << " before " << order[k];
    }
  }
  // On one thread an event starts after the one before ended, or lies inside it.
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> threads;
  std::size_t model_calls = 0;
  for (const auto& event : trace.at("traceEvents")) {
    if (event.at("ph") != "X") continue;
    const double start = event.at("ts");
    threads[{event.at("pid"), event.at("tid")}].emplace_back(start,
                                                             start + event.at("dur").get<double>());
    if (event.at("cat") == "model") {
      ++model_calls;
      EXPECT_GE(event.at("pid").get<int>(), 1) << "model calls are an engine's";
    }
  }
  EXPECT_GT(model_calls, inputs.size());
  for (auto& [thread, spans] : threads) {
    std::sort(spans.begin(), spans.end(), [](const auto& a, const auto& b) {
      return a.first < b.first || (a.first == b.first && a.second > b.second);
    });
    std::vector<double> open;  // ends of the events holding the current one
    for (const auto& [start, end] : spans) {
      while (!open.empty() && start >= open.back() - 0.01) open.pop_back();
      if (!open.empty()) {
        EXPECT_LE(end, open.back() + 0.01) << "thread " << thread.first << "/" << thread.second;
      }
      open.push_back(end);
    }
  }
}

}  // namespace
}  // namespace parley::corpus
