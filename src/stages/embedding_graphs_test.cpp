#include "stages/embedding_graphs.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <string>
#include <vector>

#include "graph/embedding_model_test_support.h"
#include "graph/onnx_graph.h"
#include "graph/onnx_inspect.h"
#include "graph/pooled_trunk_graph.h"
#include "graph/receptive_field.h"
#include "stages/embedding.h"
#include "stages/speed_twin_test_support.h"
#include "testing/shared_data.h"

namespace parley::stages {
namespace {
namespace fs = std::filesystem;
using runtime::InputShape;

class EmbeddingGraphsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ =
        fs::temp_directory_path() / ("parley_embedding_graphs_test_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
    model_ = root_ / "embedding.onnx";
    std::ofstream(model_, std::ios::binary) << graph::testing::make_test_embedding_model();
  }
  void TearDown() override { fs::remove_all(root_); }

  fs::path root_;
  fs::path model_;
};

NdArray<float> tone_waveforms(std::size_t chunks, std::size_t samples) {
  NdArray<float> waveforms({chunks, samples});
  std::uint32_t seed = 5;
  for (std::size_t c = 0; c < chunks; ++c) {
    for (std::size_t i = 0; i < samples; ++i) {
      seed = seed * 1664525u + 1013904223u;
      const double t = static_cast<double>(i) / 16000.0;
      waveforms(c, i) = static_cast<float>(
          0.2 * std::sin(2.0 * std::numbers::pi * 90.0 * static_cast<double>(c + 1) * t) +
          0.02 * (static_cast<double>(seed >> 8) / 16777216.0 - 0.5));
    }
  }
  return waveforms;
}

TEST_F(EmbeddingGraphsTest, CompileTargetsAreTheTrunkAtBucketsAndThePooledPass) {
  EmbeddingGraphSettings settings;
  settings.batch_buckets = runtime::Buckets({1, 2, 4});
  const auto targets = embedding_compile_targets(model_, root_ / "cache", settings);
  ASSERT_TRUE(targets);
  const fs::path models_dir = root_ / "cache" / "models";
  EXPECT_EQ(targets->trunk.model.parent_path(), models_dir);
  EXPECT_TRUE(fs::exists(targets->trunk.model));
  const std::vector<std::vector<InputShape>> trunk_shapes = {
      {{"feats", {1, 998, 80}}}, {{"feats", {2, 998, 80}}}, {{"feats", {4, 998, 80}}}};
  EXPECT_EQ(targets->chunk_frames, 998u);  // 10 s chunks: what the exact mode feeds
  EXPECT_EQ(targets->trunk_shapes, trunk_shapes);
  // The trunk file holds exactly the bytes the extractor splits off.
  const auto split = graph::split_before_statistics_pooling(
      graph::testing::make_test_embedding_model(), model_.string());
  EXPECT_EQ(graph::read_model_bytes(targets->trunk.model), split.trunk_model);

  ASSERT_TRUE(targets->pooled);
  EXPECT_TRUE(fs::exists(targets->pooled->model));
  EXPECT_NE(targets->pooled->sha256, targets->trunk.sha256);
  // Default shared mode at a 1 s step: a whole pass of 256 chunks, and the shorter passes of
  // 64 and 192 for a recording's rest, 3 speakers each.
  const auto passes = pooled_pass_shapes(SharedTrunkConfig{}, 16000, 160000, FbankConfig{}, 3);
  ASSERT_EQ(passes.size(), 3u);
  EXPECT_EQ(targets->pooled_pass_chunks, (std::vector<std::size_t>{64, 192, 256}));
  ASSERT_EQ(targets->pooled_shapes.size(), 3u);
  for (std::size_t i = 0; i < passes.size(); ++i) {
    EXPECT_EQ(targets->pooled_shapes[i], passes[i].inputs());
  }
  EXPECT_EQ(targets->pooled_shapes.back(),
            pooled_pass_shape(SharedTrunkConfig{}, 16000, 160000, FbankConfig{}, 3).inputs());
  EXPECT_EQ(targets->pooled_shapes.at(2).at(1).dims, (std::vector<std::int64_t>{1, 768, 3346}));
  EXPECT_EQ(targets->pooled_shapes.at(0).at(1).dims, (std::vector<std::int64_t>{1, 192, 946}));
  EXPECT_EQ(targets->pooled_shapes.at(1).at(1).dims, (std::vector<std::int64_t>{1, 576, 2546}));
  // Without tails, the whole pass only.
  EmbeddingGraphSettings whole_only = settings;
  whole_only.shared.tail_chunks_per_pass.clear();
  const auto whole = embedding_compile_targets(model_, root_ / "cache", whole_only);
  ASSERT_TRUE(whole);
  EXPECT_EQ(whole->pooled_pass_chunks, (std::vector<std::size_t>{256}));
  EXPECT_EQ(whole->pooled_shapes, (std::vector<std::vector<InputShape>>{passes.back().inputs()}));

  // Planning again names the same files (nothing is rewritten).
  const auto again = embedding_compile_targets(model_, root_ / "cache", settings);
  ASSERT_TRUE(again && again->pooled);
  EXPECT_EQ(again->trunk.model, targets->trunk.model);
  EXPECT_EQ(again->pooled->model, targets->pooled->model);
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(models_dir)) ++files;
  EXPECT_EQ(files, 2u);
}

TEST_F(EmbeddingGraphsTest, AModelWithoutStatisticsPoolingHasNoTargets) {
  const auto split = graph::split_before_statistics_pooling(
      graph::testing::make_test_embedding_model(), "test model");
  const fs::path trunk_only = root_ / "trunk_only.onnx";
  std::ofstream(trunk_only, std::ios::binary) << split.trunk_model;
  EXPECT_FALSE(embedding_compile_targets(trunk_only, root_ / "cache"));
}

TEST_F(EmbeddingGraphsTest, PooledGraphNamesItsDynamicAxesItself) {
  const auto split = graph::split_before_statistics_pooling(
      graph::testing::make_test_embedding_model(), "test model");
  const auto pooled = pooled_trunk_graph(split, "test model", root_, 0.0);
  using Names = graph::PooledTrunkGraphNames;
  ASSERT_EQ(pooled.inputs.size(), 5u);
  EXPECT_EQ(pooled.inputs[4].name, Names::kValidFrames);
  EXPECT_EQ(pooled.inputs[4].symbols, (std::vector<std::string>{"B"}));
  EXPECT_EQ(pooled.inputs[0].name, Names::kFeatures);
  EXPECT_EQ(pooled.inputs[0].dims, (std::vector<std::int64_t>{-1, -1, 80}));
  EXPECT_EQ(pooled.inputs[0].symbols, (std::vector<std::string>{"B", "frames", ""}));
  // So the overrides for a pass are the same whatever the source model calls its axes.
  const auto pass = pooled_pass_shape(SharedTrunkConfig{}, 16000, 160000, FbankConfig{}, 3);
  const auto overrides = runtime::dimension_overrides(pooled.inputs, pass.inputs());
  EXPECT_EQ(overrides, (std::map<std::string, std::int64_t>{
                           {"B", 1}, {"frames", 26768}, {"pairs", 768}, {"trunk_frames", 3346}}));
}

TEST_F(EmbeddingGraphsTest, ExactModeTrunkCallsArePaddedToBucketsAndMatchOneSession) {
  const std::string model = graph::testing::make_test_embedding_model();
  EmbeddingConfig plain_config;
  plain_config.batch_size = 4;
  EmbeddingExtractor plain(model, model_.string(), plain_config);
  ASSERT_FALSE(plain.opens_per_shape());

  // What a static-shape provider gets, forced on the CPU: sessions per bucket, from the file.
  EmbeddingConfig bucketed_config = plain_config;
  bucketed_config.batch_buckets = runtime::Buckets::powers_of_two(4);
  bucketed_config.compile_cache_root = root_ / "cache";
  EmbeddingExtractor bucketed(model, model_.string(), bucketed_config);
  ASSERT_TRUE(bucketed.opens_per_shape());

  const std::size_t chunks = 7;  // calls of 4 and 3 chunks: the second padded to 4
  const std::size_t samples = 16000;
  const std::size_t frames = 59;
  const auto waveforms = tone_waveforms(chunks, samples);
  NdArray<float> segmentation({chunks, frames, 3}, 0.0f);
  for (std::size_t c = 0; c < chunks; ++c) {
    for (std::size_t f = 0; f < frames; ++f) {
      segmentation(c, f, c % 3) = 1.0f;
      segmentation(c, f, (c + 1) % 3) = f > 20 + c ? 1.0f : 0.0f;
    }
  }
  const auto expected = plain.embed_chunks(waveforms, segmentation);
  const auto actual = bucketed.embed_chunks(waveforms, segmentation);
  ASSERT_EQ(actual.shape(), expected.shape());
  double worst = 0.0;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    worst = std::max(worst, static_cast<double>(std::abs(actual(i) - expected(i))));
  }
  ::testing::Test::RecordProperty("worst_abs_difference", std::to_string(worst));
  EXPECT_LT(worst, 1e-5);
  // One graph for both calls: the tail of 3 ran padded to the bucket of 4.
  EXPECT_EQ(bucketed.opened_shapes(),
            (std::vector<std::vector<InputShape>>{{{"feats", {4, 98, 80}}}}));

  // A batch of 3 alone also runs padded to 4 and returns 3 rows equal to the unpadded ones.
  const auto features = plain.features(tone_waveforms(3, samples));
  const auto unpadded = plain.trunk_frames_from_features(features);
  const auto padded = bucketed.trunk_frames_from_features(features);
  ASSERT_EQ(padded.shape(), unpadded.shape());
  for (std::size_t i = 0; i < padded.size(); ++i) EXPECT_NEAR(padded(i), unpadded(i), 1e-5);
  EXPECT_EQ(bucketed.opened_shapes().size(), 1u);
  // The file opened is the content-addressed trunk warm-cache compiles.
  const auto targets = embedding_compile_targets(model_, root_ / "cache");
  ASSERT_TRUE(targets);
  EXPECT_TRUE(fs::exists(targets->trunk.model));
  std::size_t trunk_files = 0;
  for (const auto& entry : fs::directory_iterator(root_ / "cache" / "models")) {
    trunk_files += entry.path().filename().string().find("-trunk-") != std::string::npos;
  }
  EXPECT_EQ(trunk_files, 1u) << "the extractor and the planning wrote the same trunk file";
}

// warm-cache asks embedding_compile_targets of every model: segmentation-3.0 must stay a model
// compiled as it is, and WeSpeaker's graph (the speed twin has it) must give both graphs, the
// pooled one with parley's dimension names in place of WeSpeaker's "T".
TEST_F(EmbeddingGraphsTest, RealModelsArePlannedAsThePipelineLoadsThem) {
  PARLEY_REQUIRE_SHARED(segmentation, "models/segmentation-3.0-fp16.onnx");
  EXPECT_FALSE(embedding_compile_targets(segmentation, root_ / "cache"));
  const fs::path twin = testing::speed_twin_for_tests();
  if (twin.empty()) GTEST_SKIP() << "could not generate the speed twin (needs python3-onnx)";
  const auto targets = embedding_compile_targets(twin, root_ / "cache");
  ASSERT_TRUE(targets && targets->pooled);
  ASSERT_EQ(targets->trunk.inputs.size(), 1u);
  EXPECT_EQ(targets->trunk.inputs[0].symbols, (std::vector<std::string>{"B", "T", ""}));
  EXPECT_EQ(runtime::dimension_overrides(targets->trunk.inputs, targets->trunk_shapes.back()),
            (std::map<std::string, std::int64_t>{{"B", 32}, {"T", 998}}));
  EXPECT_EQ(targets->pooled->inputs.at(0).symbols, (std::vector<std::string>{"B", "frames", ""}));
  for (const auto& shapes : targets->pooled_shapes) {
    EXPECT_EQ(runtime::dimension_overrides(targets->pooled->inputs, shapes).size(), 4u);
  }
}

// WeSpeaker ResNet34's trunk (the speed twin has its graph) reaches 112 fbank frames each way and
// keeps one frame in 8: what docs/embedding.md section 8.3 derived by hand, and what the shared
// trunk's default margin of 128 frames covers.
TEST_F(EmbeddingGraphsTest, ResNet34TrunkReachesOneHundredTwelveFramesEachWay) {
  const fs::path twin = testing::speed_twin_for_tests();
  if (twin.empty()) GTEST_SKIP() << "could not generate the speed twin (needs python3-onnx)";
  const graph::StatisticsPoolingSplit split =
      graph::split_before_statistics_pooling(graph::read_model_bytes(twin), "twin");
  const graph::TimeReceptiveField field = graph::time_receptive_field(
      split.trunk_model, "twin", split.features_input, 1, split.pooling_input);
  ASSERT_EQ(field.kind, graph::TimeReceptiveField::Kind::kLocal) << field.to_string();
  EXPECT_EQ(field.stride, 8);
  EXPECT_EQ(field.before, 112);
  EXPECT_EQ(field.after, 112);
  EXPECT_LE(field.reach(), static_cast<std::int64_t>(SharedTrunkConfig{}.margin_frames));
}

}  // namespace
}  // namespace parley::stages
