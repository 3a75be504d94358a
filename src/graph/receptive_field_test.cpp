#include "graph/receptive_field.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "graph/embedding_model_test_support.h"
#include "graph/onnx_graph.h"

namespace parley::graph {
namespace {

using Kind = TimeReceptiveField::Kind;

// The test embedding model: features [B, T, 80] -> Transpose -> Unsqueeze -> three 3x3 convs
// of stride 2 with one frame of padding. Each widens the reach by one of its own input frames on
// each side: 1, then 2, then 4 fbank frames: 7 before and 7 after, stride 8.
TEST(ReceptiveField, ThreeStridedConvolutions) {
  const std::string model = testing::make_test_embedding_model();
  const StatisticsPoolingSplit split = split_before_statistics_pooling(model, "test model");
  const TimeReceptiveField field = time_receptive_field(
      split.trunk_model, "test model", split.features_input, 1, split.pooling_input);
  ASSERT_EQ(field.kind, Kind::kLocal) << field.to_string();
  EXPECT_EQ(field.stride, 8);
  EXPECT_EQ(field.before, 7);
  EXPECT_EQ(field.after, 7);
  EXPECT_EQ(field.reach(), 7);
}

// A hand-built graph: input [B, 1, F, T] -> Conv (kernel 5 along time, dilation 2, pads 4 and
// 0: all context before) -> Relu -> `last`, with `extra` appended after the Relu.
std::string small_model(const std::string& extra_op, std::vector<std::int64_t> extra_axes = {}) {
  onnx::ModelProto model;
  model.set_ir_version(7);
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(11);
  auto* graph = model.mutable_graph();
  graph->set_name("small");
  auto* input = graph->add_input();
  input->set_name("x");
  auto* tensor = input->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::FLOAT);
  for (int i = 0; i < 4; ++i) tensor->mutable_shape()->add_dim()->set_dim_param("d");
  auto* weight = graph->add_initializer();
  weight->set_name("w");
  weight->set_data_type(onnx::TensorProto::FLOAT);
  for (const std::int64_t dim : {1, 1, 1, 5}) weight->add_dims(dim);
  for (int i = 0; i < 5; ++i) weight->add_float_data(0.2f);
  auto* conv = graph->add_node();
  conv->set_op_type("Conv");
  conv->set_name("conv");
  const std::string input_name = "x", weight_name = "w", conv_name = "c";
  conv->add_input(input_name);
  conv->add_input(weight_name);
  conv->add_output(conv_name);
  auto ints = [](onnx::NodeProto* node, const std::string& name, std::vector<std::int64_t> values) {
    auto* attribute = node->add_attribute();
    attribute->set_name(name);
    attribute->set_type(onnx::AttributeProto::INTS);
    for (const auto value : values) attribute->add_ints(value);
  };
  ints(conv, "dilations", {1, 2});
  ints(conv, "pads", {0, 8, 0, 0});
  auto* relu = graph->add_node();
  relu->set_op_type("Relu");
  relu->set_name("relu");
  const std::string relu_name = extra_op.empty() ? "last" : "r";
  relu->add_input(conv_name);
  relu->add_output(relu_name);
  if (!extra_op.empty()) {
    auto* extra = graph->add_node();
    extra->set_op_type(extra_op);
    extra->set_name("extra");
    const std::string output_name = "last";
    extra->add_input(relu_name);
    extra->add_output(output_name);
    if (!extra_axes.empty()) ints(extra, "axes", extra_axes);
  }
  graph->add_output()->set_name("last");
  return model.SerializeAsString();
}

TEST(ReceptiveField, AsymmetricDilatedConvolution) {
  const TimeReceptiveField field = time_receptive_field(small_model(""), "small", "x", 3, "last");
  ASSERT_EQ(field.kind, Kind::kLocal) << field.to_string();
  EXPECT_EQ(field.stride, 1);
  EXPECT_EQ(field.before, 8);  // (5 - 1) * 2 frames, all padded before
  EXPECT_EQ(field.after, 0);
}

TEST(ReceptiveField, OperatorsAcrossTimeAreGlobalOrUnknown) {
  EXPECT_EQ(time_receptive_field(small_model("GlobalAveragePool"), "small", "x", 3, "last").kind,
            Kind::kGlobal);
  EXPECT_EQ(
      time_receptive_field(small_model("InstanceNormalization"), "small", "x", 3, "last").kind,
      Kind::kGlobal);
  EXPECT_EQ(time_receptive_field(small_model("ReduceMean", {3}), "small", "x", 3, "last").kind,
            Kind::kGlobal);
  // Averaging over frequency only is not followed (the result is not a [B, C, F, T] map), but it
  // does not mix time either.
  EXPECT_EQ(time_receptive_field(small_model("ReduceMean", {2}), "small", "x", 3, "last").kind,
            Kind::kUnknown);
  const TimeReceptiveField unknown =
      time_receptive_field(small_model("SpaceToDepth"), "small", "x", 3, "last");
  EXPECT_EQ(unknown.kind, Kind::kUnknown);
  EXPECT_NE(unknown.reason.find("SpaceToDepth"), std::string::npos) << unknown.reason;
  EXPECT_THROW(time_receptive_field(small_model(""), "small", "missing", 3, "last"), Error);
  const TimeReceptiveField squeeze =
      time_receptive_field(small_model("Squeeze"), "small", "x", 3, "last");
  EXPECT_EQ(squeeze.kind, Kind::kUnknown);
  EXPECT_NE(squeeze.reason.find("no axes"), std::string::npos) << squeeze.reason;
  // A tensor's shape carries no frames: nothing after Shape depends on the input's time axis.
  EXPECT_THROW(time_receptive_field(small_model("Shape"), "small", "x", 3, "last"), Error);
}

}  // namespace
}  // namespace parley::graph
