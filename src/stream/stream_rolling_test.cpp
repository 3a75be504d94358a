// The live diarizer's embedding choices (StreamConfig::embedding) on the real segmentation model
// and the small test embedding network (graph/embedding_model_test_support.h): speaker labels
// are meaningless with random weights, but every step runs the networks the stream runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "audio/mono_resampled_stream.h"
#include "core/error.h"
#include "graph/embedding_model_test_support.h"
#include "stream/stream_diarizer.h"
#include "testing/shared_data.h"
#include "testing/temporary_directory.h"

namespace parley::stream {
namespace {

class StreamRolling : public ::testing::Test {
 protected:
  void SetUp() override {
    PARLEY_REQUIRE_SHARED(segmentation, "models/segmentation-3.0-fp16.onnx");
    PARLEY_REQUIRE_SHARED(audio_path, "eval/pyannote-sample/sample.wav");
    segmentation_ = segmentation;
    audio_ = audio::load_mono_16k(audio_path);
    embedding_ = temp_ / "test_embedding.onnx";
    std::ofstream(embedding_, std::ios::binary) << graph::testing::make_test_embedding_model();
  }
  StreamModels make_models(stages::EmbeddingMode mode = stages::EmbeddingMode::kShared) {
    pipeline::DiarizationConfig config;
    config.embedding_mode = mode;
    config.clustering.method = cluster::ClusteringMethod::kAhc;
    return StreamModels({segmentation_, embedding_, {}}, config);
  }
  // The stream's windows over the sample: window k holds samples [k step - window, k step).
  std::vector<std::vector<float>> windows(std::size_t step) const {
    std::vector<std::vector<float>> all;
    for (std::size_t end = step; end < audio_.size() + step; end += step) {
      std::vector<float> window(160000, 0.0F);
      for (std::size_t i = 0; i < window.size(); ++i) {
        const auto at = static_cast<std::int64_t>(end) - 160000 + static_cast<std::int64_t>(i);
        if (at >= 0 && static_cast<std::size_t>(at) < audio_.size()) window[i] = audio_[at];
      }
      all.push_back(std::move(window));
    }
    return all;
  }

  testing::TemporaryDirectory temp_{"stream-rolling-test"};
  std::filesystem::path segmentation_;
  std::filesystem::path embedding_;
  std::vector<float> audio_;
};

double cosine(const NdArray<float>& a, std::size_t row_a, const NdArray<float>& b,
              std::size_t row_b) {
  double dot = 0.0, na = 0.0, nb = 0.0;
  for (std::size_t d = 0; d < a.dim(1); ++d) {
    dot += static_cast<double>(a(row_a, d)) * b(row_b, d);
    na += static_cast<double>(a(row_a, d)) * a(row_a, d);
    nb += static_cast<double>(b(row_b, d)) * b(row_b, d);
  }
  return dot / std::sqrt(na * nb);
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0.0 : values[values.size() / 2];
}

// Rolling against whole-window embeddings, step by step, for the local speakers the clustering
// learns from (active in at least 20 % of the window, pyannote's filter). For reference, the
// window mode's own jitter: one local speaker's embeddings in two consecutive windows. Measured
// (test model, pyannote sample, 0.5 s step, 76 pairs): worst cosine 0.926, median 1 - cosine
// 0.0070 against a jitter of 0.0028. Most of a window's frames settled in earlier steps, centred
// with those windows' means (docs/embedding.md §8.9). A frame misplaced by a trunk frame, a
// wrong mean or uncentred features fall far outside the bounds, which keep a margin.
TEST_F(StreamRolling, RollingCloseToFullWindow) {
  const StreamModels models = make_models();
  const WindowModel& model = models.model();
  StreamConfig config;
  config.embedding = StreamEmbedding::kRolling;
  const std::unique_ptr<WindowModelState> state = model.open_stream(config, 8000);
  ASSERT_NE(state, nullptr);
  std::vector<double> distances, control;
  double worst = 1.0;
  std::size_t pairs = 0;
  WindowAnalysis previous;
  std::vector<bool> previous_long;
  StageTimes times;
  for (const std::vector<float>& window : windows(8000)) {
    const WindowAnalysis whole = model.analyze_timed(window, times);
    const WindowAnalysis rolling = model.analyze_step(state.get(), window, times);
    ASSERT_EQ(whole.segmentation.values(), rolling.segmentation.values())
        << "the embedding choice must not change the segmentation";
    std::vector<bool> long_enough(whole.segmentation.dim(1), false);
    for (std::size_t l = 0; l < whole.segmentation.dim(1); ++l) {
      std::size_t on = 0;
      for (std::size_t f = 0; f < whole.segmentation.dim(0); ++f) {
        on += whole.segmentation(f, l) > 0.5F ? 1 : 0;
      }
      if (on < whole.segmentation.dim(0) / 5) continue;
      long_enough[l] = true;
      const double c = cosine(whole.embeddings, l, rolling.embeddings, l);
      worst = std::min(worst, c);
      distances.push_back(1.0 - c);
      ++pairs;
      if (!previous_long.empty() && previous_long[l]) {
        control.push_back(1.0 - cosine(whole.embeddings, l, previous.embeddings, l));
      }
    }
    previous = whole;
    previous_long = long_enough;
  }
  RecordProperty("pairs", std::to_string(pairs));
  RecordProperty("worst_cosine", std::to_string(worst));
  RecordProperty("median_distance", std::to_string(median(distances)));
  RecordProperty("window_jitter_median_distance", std::to_string(median(control)));
  ASSERT_GT(pairs, 40U);
  EXPECT_GT(worst, 0.88);
  EXPECT_LT(median(distances), 0.015);
}

struct StreamRun {
  std::vector<StreamEvent> events;
  StreamEmbedding used = StreamEmbedding::kAuto;
};

StreamRun stream_in_chunks(const StreamModels& models, const StreamConfig& config,
                           const std::vector<float>& audio, const std::vector<std::size_t>& sizes) {
  StreamDiarizer diarizer(models, config);
  StreamRun run;
  run.used = diarizer.embedding();
  std::size_t at = 0, k = 0;
  while (at < audio.size()) {
    const std::size_t n = std::min(sizes[k++ % sizes.size()], audio.size() - at);
    diarizer.push(std::span<const float>(audio).subspan(at, n));
    at += n;
    for (StreamEvent& e : diarizer.take_events()) run.events.push_back(std::move(e));
  }
  diarizer.finish();
  for (StreamEvent& e : diarizer.take_events()) run.events.push_back(std::move(e));
  return run;
}

// Work is whole steps computed from the step sequence alone, the rolling trunk's cache included.
TEST_F(StreamRolling, EventsDoNotDependOnChunkSizes) {
  const StreamModels models = make_models();
  StreamConfig config;
  config.embedding = StreamEmbedding::kRolling;
  config.provisional = true;
  const StreamRun whole = stream_in_chunks(models, config, audio_, {audio_.size()});
  EXPECT_EQ(whole.used, StreamEmbedding::kRolling);
  ASSERT_GT(whole.events.size(), 4U);
  for (const std::vector<std::size_t>& sizes :
       {std::vector<std::size_t>{1234, 7, 16001}, std::vector<std::size_t>{8000}}) {
    const StreamRun chunked = stream_in_chunks(models, config, audio_, sizes);
    ASSERT_EQ(whole.events.size(), chunked.events.size());
    for (std::size_t i = 0; i < whole.events.size(); ++i) {
      EXPECT_TRUE(whole.events[i].same_decision(chunked.events[i]))
          << i << ": " << whole.events[i].to_json() << " vs " << chunked.events[i].to_json();
    }
  }
}

// Streams on one model set from several threads (as parley serve's WebSocket streams, or
// parley_stream handles on one parley_diarizer): each gives the events it gives alone, the
// rolling trunk's per-stream cache and whole-window streams mixed.
TEST_F(StreamRolling, StreamsInThreadsOnSharedModelsGiveTheirOwnEvents) {
  const StreamModels models = make_models();
  // Two 12 s pieces of the sample's conversation (it starts at 6.7 s): several turns each,
  // cheap enough for three streams twice over.
  const std::vector<float> first(audio_.begin() + 80000, audio_.begin() + 272000);
  const std::vector<float> later(audio_.begin() + 240000, audio_.begin() + 432000);
  struct Job {
    const std::vector<float>* audio;
    StreamEmbedding embedding;
    std::vector<std::size_t> sizes;
  };
  const std::vector<Job> jobs{{&first, StreamEmbedding::kRolling, {3200}},
                              {&later, StreamEmbedding::kRolling, {1234, 16001}},
                              {&first, StreamEmbedding::kWindow, {8000}}};
  const auto run = [&](const Job& job) {
    StreamConfig config;
    config.embedding = job.embedding;
    config.provisional = true;
    return stream_in_chunks(models, config, *job.audio, job.sizes);
  };
  std::vector<StreamRun> alone;
  for (const Job& job : jobs) alone.push_back(run(job));
  std::vector<StreamRun> together(jobs.size());
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    threads.emplace_back([&, i] { together[i] = run(jobs[i]); });
  }
  for (std::thread& thread : threads) thread.join();
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    SCOPED_TRACE(i);
    ASSERT_GT(alone[i].events.size(), 4U);
    ASSERT_EQ(alone[i].events.size(), together[i].events.size());
    for (std::size_t e = 0; e < alone[i].events.size(); ++e) {
      EXPECT_TRUE(alone[i].events[e].same_decision(together[i].events[e]))
          << e << ": " << alone[i].events[e].to_json() << " vs " << together[i].events[e].to_json();
    }
  }
}

// What `auto` resolves to, and what an explicit rolling refuses.
TEST_F(StreamRolling, EmbeddingChoice) {
  const StreamModels shared = make_models();
  const StreamModels exact = make_models(stages::EmbeddingMode::kExact);
  StreamConfig config;
  EXPECT_EQ(StreamDiarizer(shared, config).embedding(), StreamEmbedding::kRolling);
  EXPECT_EQ(StreamDiarizer(exact, config).embedding(), StreamEmbedding::kWindow);
  config.embedding = StreamEmbedding::kWindow;
  EXPECT_EQ(StreamDiarizer(shared, config).embedding(), StreamEmbedding::kWindow);
  config.embedding = StreamEmbedding::kRolling;
  EXPECT_EQ(StreamDiarizer(exact, config).embedding(), StreamEmbedding::kRolling);
  // 0.3333 s is not a whole number of 10 ms fbank frames: auto keeps whole windows, rolling
  // says why it cannot.
  config.step_seconds = 0.3333;
  config.latency_seconds = 1.0;
  try {
    StreamDiarizer refused(shared, config);
    FAIL() << "rolling at a step off the fbank grid must be refused";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("10 ms"), std::string::npos) << error.what();
  }
  config.embedding = StreamEmbedding::kAuto;
  EXPECT_EQ(StreamDiarizer(shared, config).embedding(), StreamEmbedding::kWindow);
}

// The stream's state counts the trunk's cache, and the per-stage seconds split its work.
TEST_F(StreamRolling, StateCountsTheCacheAndStagesSplitTheTrunk) {
  const StreamModels models = make_models();
  StreamConfig config;
  config.embedding = StreamEmbedding::kWindow;
  StreamDiarizer window(models, config);
  config.embedding = StreamEmbedding::kRolling;
  StreamDiarizer rolling(models, config);
  const std::span<const float> two_seconds = std::span<const float>(audio_).subspan(0, 32000);
  window.push(two_seconds);
  rolling.push(two_seconds);
  EXPECT_GT(rolling.state().working_bytes, window.state().working_bytes + 100000);
  std::vector<std::string> stages;
  for (const auto& [stage, seconds] : rolling.stage_times().entries()) stages.push_back(stage);
  for (const char* expected : {"segmentation", "embedding features", "embedding trunk",
                               "embedding pooling", "clustering", "aggregation"}) {
    EXPECT_NE(std::find(stages.begin(), stages.end(), expected), stages.end()) << expected;
  }
}

TEST(StreamEmbeddingNames, ParseAndName) {
  for (const StreamEmbedding e :
       {StreamEmbedding::kAuto, StreamEmbedding::kWindow, StreamEmbedding::kRolling}) {
    EXPECT_EQ(parse_stream_embedding(stream_embedding_name(e)), e);
  }
  EXPECT_THROW(parse_stream_embedding("fast"), Error);
}

}  // namespace
}  // namespace parley::stream
