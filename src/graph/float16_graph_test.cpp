#include "graph/float16_graph.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <onnxruntime_cxx_api.h>

#include <cstring>

#include "core/error.h"
#include "graph/accelerator_rewrite.h"
#include "graph/embedding_model_test_support.h"
#include "graph/onnx_graph.h"
#include "testing/shared_data.h"

namespace parley::graph {
namespace {

onnx::ModelProto parse(const std::string& bytes) {
  onnx::ModelProto model;
  EXPECT_TRUE(model.ParseFromString(bytes));
  return model;
}

std::vector<float> floats_of(const onnx::TensorProto& tensor) {
  std::vector<float> values(tensor.raw_data().size() / sizeof(float));
  std::memcpy(values.data(), tensor.raw_data().data(), values.size() * sizeof(float));
  if (values.empty()) values.assign(tensor.float_data().begin(), tensor.float_data().end());
  return values;
}

// Every float32 weight becomes float16 (rounded to nearest), the graph still takes and gives
// float32: a cast where the input enters and one where the output leaves.
TEST(Float16Graph, TrunkComputesInFloat16BetweenFloat32Ends) {
  const std::string model = testing::make_test_embedding_model();
  const auto split = split_before_statistics_pooling(model, "test");
  const onnx::ModelProto before = parse(split.trunk_model);
  const Float16Graph converted = convert_to_float16(split.trunk_model, "test");
  const onnx::ModelProto after = parse(converted.model);

  ASSERT_EQ(after.graph().initializer_size(), before.graph().initializer_size());
  EXPECT_GT(converted.tensors_converted, 0);
  for (int i = 0; i < after.graph().initializer_size(); ++i) {
    const auto& original = before.graph().initializer(i);
    const auto& half = after.graph().initializer(i);
    if (original.data_type() != onnx::TensorProto::FLOAT) continue;
    ASSERT_EQ(half.data_type(), onnx::TensorProto::FLOAT16) << half.name();
    const std::vector<float> values = floats_of(original);
    ASSERT_EQ(half.raw_data().size(), values.size() * sizeof(std::uint16_t));
    for (std::size_t k = 0; k < values.size(); ++k) {
      std::uint16_t bits = 0;
      std::memcpy(&bits, half.raw_data().data() + k * sizeof(bits), sizeof(bits));
      ASSERT_EQ(bits, Ort::Float16_t(values[k]).val) << half.name() << "[" << k << "]";
    }
  }
  EXPECT_EQ(converted.casts_added, 2);
  const auto& graph = after.graph();
  EXPECT_EQ(graph.input(0).type().tensor_type().elem_type(), onnx::TensorProto::FLOAT);
  EXPECT_EQ(graph.output(0).type().tensor_type().elem_type(), onnx::TensorProto::FLOAT);
  const auto& first = graph.node(0);
  EXPECT_EQ(first.op_type(), "Cast");
  EXPECT_EQ(first.input(0), graph.input(0).name());
  const auto& last = graph.node(graph.node_size() - 1);
  EXPECT_EQ(last.op_type(), "Cast");
  EXPECT_EQ(last.output(0), graph.output(0).name());
  EXPECT_EQ(last.attribute(0).i(), onnx::TensorProto::FLOAT);
  // Nothing else reads the float32 input or writes the float32 output any more.
  for (int i = 1; i + 1 < graph.node_size(); ++i) {
    for (const auto& name : graph.node(i).input()) EXPECT_NE(name, graph.input(0).name());
    for (const auto& name : graph.node(i).output()) EXPECT_NE(name, graph.output(0).name());
  }
}

// A model that computes its SincNet filters at run time (Clip, Sin, ...) is refused, naming the
// first operator off the list; the folded model converts (stages/accelerator_model_test.cpp).
TEST(Float16Graph, UnfoldedSegmentationModelIsRefused) {
  PARLEY_REQUIRE_SHARED(path, "models/segmentation-3.0-fp16.onnx");
  const auto rewrite = rewrite_for_accelerator(read_model_bytes(path), path.string());
  EXPECT_THROW(convert_to_float16(rewrite.model, path.string()), Error);
}

// Statistics pooling's ReduceMean is not on the float16 list: the whole embedding model is
// refused, naming the operator (the pipeline converts only the trunk before it).
TEST(Float16Graph, UnlistedOperatorIsRefusedNamingIt) {
  try {
    convert_to_float16(testing::make_test_embedding_model(), "whole.onnx");
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("whole.onnx"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("ReduceMean"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace parley::graph
