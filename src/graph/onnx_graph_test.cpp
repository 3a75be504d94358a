#include "graph/onnx_graph.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "graph/embedding_model_test_support.h"
#include "runtime/onnx_session.h"
#include "testing/shared_data.h"

namespace parley::graph {
namespace {

using testing::kTestEmbeddingDim;
using testing::kTestPooledFeatures;
using testing::make_test_embedding_model;
using testing::TestEmbeddingModelOptions;

NdArray<float> random_features(std::size_t batch, std::size_t frames, std::uint32_t seed) {
  NdArray<float> features({batch, frames, 80});
  std::uint32_t state = seed;
  for (float& value : features.values()) {
    state = state * 1664525u + 1013904223u;
    value = 2.0f * (static_cast<float>(state >> 8) / 16777216.0f - 0.5f);
  }
  return features;
}

// Embeddings computed from the trunk's output the plain way: mean and sqrt(unbiased variance +
// epsilon) over the last axis, then the extracted linear layer. Independent of pipeline/.
NdArray<float> head_on_trunk_output(const NdArray<float>& frames, const LinearLayer& head,
                                    double epsilon) {
  const std::size_t batch = frames.dim(0);
  const std::size_t time = frames.dim(frames.rank() - 1);
  const std::size_t features = frames.size() / (batch * time);
  NdArray<float> embeddings({batch, head.output_dim()});
  for (std::size_t b = 0; b < batch; ++b) {
    std::vector<double> stats(2 * features);
    for (std::size_t k = 0; k < features; ++k) {
      const float* row = frames.data() + (b * features + k) * time;
      double mean = 0.0;
      for (std::size_t t = 0; t < time; ++t) mean += row[t];
      mean /= static_cast<double>(time);
      double squares = 0.0;
      for (std::size_t t = 0; t < time; ++t) squares += (row[t] - mean) * (row[t] - mean);
      stats[k] = mean;
      stats[features + k] = std::sqrt(squares / static_cast<double>(time - 1) + epsilon);
    }
    for (std::size_t d = 0; d < head.output_dim(); ++d) {
      double sum = head.bias[d];
      for (std::size_t i = 0; i < stats.size(); ++i) sum += head.weight(d, i) * stats[i];
      embeddings(b, d) = static_cast<float>(sum);
    }
  }
  return embeddings;
}

void expect_split_reproduces_model(const TestEmbeddingModelOptions& options,
                                   const std::vector<std::size_t>& expected_trunk_shape) {
  const std::string model = make_test_embedding_model(options);
  const auto split = split_before_statistics_pooling(model, "test model");
  EXPECT_EQ(split.features_input, "feats");
  EXPECT_EQ(split.embedding_output, "embs");
  EXPECT_EQ(split.time_axis, -1);
  EXPECT_EQ(split.head.output_dim(), kTestEmbeddingDim);
  EXPECT_EQ(split.head.input_dim(), 2 * kTestPooledFeatures);

  runtime::OnnxSession full(runtime::ModelBuffer{model, "full"}, runtime::SessionConfig{});
  runtime::OnnxSession trunk(runtime::ModelBuffer{split.trunk_model, "trunk"},
                             runtime::SessionConfig{});
  ASSERT_EQ(trunk.outputs().size(), 1u);
  EXPECT_EQ(trunk.outputs()[0].name, split.pooling_input);

  const auto features = random_features(3, 101, 99);
  const NdArray<float> expected = full.run({{"feats", &features}}, {"embs"}).at(0);
  const NdArray<float> frames = trunk.run({{"feats", &features}}, {split.pooling_input}).at(0);
  EXPECT_EQ(frames.shape(), expected_trunk_shape);
  const auto actual = head_on_trunk_output(frames, split.head, options.variance_epsilon);
  ASSERT_EQ(actual.shape(), expected.shape());
  for (std::size_t i = 0; i < actual.size(); ++i) EXPECT_NEAR(actual(i), expected(i), 1e-5);
}

TEST(OnnxGraph, SplitsWeSpeakerPoolingOnFourDimensionalFrames) {
  // 101 frames -> 51 -> 26 -> 13 after three stride-2 convolutions.
  expect_split_reproduces_model({}, {3, 8, 10, 13});
  const auto split = split_before_statistics_pooling(make_test_embedding_model(), "test model");
  EXPECT_EQ(split.pooling_input, "frames");
  EXPECT_NE(split.to_string().find("pooling_input=frames"), std::string::npos);
}

TEST(OnnxGraph, SplitsPoolingOnAReshapedThreeDimensionalTensor) {
  TestEmbeddingModelOptions options;
  options.reshape_to_3d = true;
  expect_split_reproduces_model(options, {3, 80, 13});
  EXPECT_EQ(split_before_statistics_pooling(make_test_embedding_model(options), "m").pooling_input,
            "frames_3d");
}

TEST(OnnxGraph, ReadsAMatMulPlusAddHead) {
  TestEmbeddingModelOptions options;
  options.matmul_head = true;
  expect_split_reproduces_model(options, {3, 8, 10, 13});
}

TEST(OnnxGraph, TrunkKeepsOnlyWhatThePoolingInputNeeds) {
  const std::string model = make_test_embedding_model();
  const auto split = split_before_statistics_pooling(model, "test model");
  // The head's weights (16 x 160 floats) and mean_vec are gone from the trunk.
  EXPECT_LT(split.trunk_model.size() + 16 * 160 * sizeof(float), model.size() + 64);
  EXPECT_EQ(split_before_statistics_pooling(model, "again").trunk_model, split.trunk_model);
}

TEST(OnnxGraph, RefusesStatisticsInTheWrongOrder) {
  TestEmbeddingModelOptions options;
  options.std_first = true;
  try {
    split_before_statistics_pooling(make_test_embedding_model(options), "swapped.onnx");
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("swapped.onnx"), std::string::npos);
    EXPECT_NE(std::string(error.what()).find("mean first"), std::string::npos);
  }
}

TEST(OnnxGraph, RefusesBytesThatAreNotAModel) {
  EXPECT_THROW(split_before_statistics_pooling("definitely not protobuf \xff\xff", "junk.onnx"),
               Error);
  EXPECT_THROW(read_model_bytes("/nonexistent/model.onnx"), Error);
}

TEST(OnnxGraph, RefusesASegmentationModel) {
  PARLEY_REQUIRE_SHARED(path, "models/segmentation-3.0-fp16.onnx");
  try {
    split_before_statistics_pooling(read_model_bytes(path), path.filename().string());
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("WeSpeaker"), std::string::npos) << error.what();
  }
}

// A graph with a Sin node over a filter parameter stored as `filter_type`, the way SincNet
// builds its filterbank; `folded` stores the result as a constant instead.
std::string filter_graph(int filter_type, bool folded) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  onnx::GraphProto& graph = *model.mutable_graph();
  onnx::TensorProto& parameter = *graph.add_initializer();
  parameter.set_name("low_hz");
  parameter.set_data_type(filter_type);
  parameter.add_dims(1);
  parameter.add_int32_data(0);
  onnx::NodeProto& node = *graph.add_node();
  node.set_op_type(folded ? "Identity" : "Sin");
  node.add_input("low_hz");
  node.add_output("filters");
  graph.add_output()->set_name("filters");
  return model.SerializeAsString();
}

TEST(FilterPrecision, Float16FiltersComputedAtRunTimeAreFound) {
  EXPECT_TRUE(computes_filters_in_float16(filter_graph(onnx::TensorProto::FLOAT16, false), "a"));
  EXPECT_FALSE(computes_filters_in_float16(filter_graph(onnx::TensorProto::FLOAT16, true), "b"));
  EXPECT_FALSE(computes_filters_in_float16(filter_graph(onnx::TensorProto::FLOAT, false), "c"));
  EXPECT_THROW(computes_filters_in_float16("not a model", "d"), Error);
}

}  // namespace
}  // namespace parley::graph
