#include "graph/constant_if_inlining.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cctype>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "graph/onnx_graph.h"
#include "runtime/onnx_session.h"
#include "testing/shared_data.h"

namespace parley::graph {
namespace {

onnx::NodeProto* add_node(onnx::GraphProto& graph, const std::string& op,
                          const std::vector<std::string>& inputs, const std::string& output) {
  auto* node = graph.add_node();
  node->set_op_type(op);
  node->set_name(op + "_" + output);
  for (const auto& input : inputs) node->add_input(input);
  node->add_output(output);
  return node;
}

void add_int64_constant(onnx::GraphProto& graph, const std::string& name,
                        std::vector<std::int64_t> values, bool scalar) {
  auto* node = add_node(graph, "Constant", {}, name);
  auto* attribute = node->add_attribute();
  attribute->set_name("value");
  attribute->set_type(onnx::AttributeProto::TENSOR);
  auto* tensor = attribute->mutable_t();
  tensor->set_data_type(onnx::TensorProto::INT64);
  if (!scalar) tensor->add_dims(static_cast<std::int64_t>(values.size()));
  tensor->set_raw_data(values.data(), values.size() * sizeof(std::int64_t));
}

void set_float_value_info(onnx::ValueInfoProto& value, const std::string& name,
                          const std::vector<std::string>& dims) {
  value.set_name(name);
  auto* tensor = value.mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::FLOAT);
  for (const auto& dim : dims) {
    auto* entry = tensor->mutable_shape()->add_dim();
    if (!dim.empty() && std::isdigit(static_cast<unsigned char>(dim[0]))) {
      entry->set_dim_value(std::stoll(dim));
    } else {
      entry->set_dim_param(dim);
    }
  }
}

struct TestModelOptions {
  std::vector<std::string> input_dims = {"2", "1", "4"};
  std::int64_t condition_axis = 1;  // condition: Shape(x)[axis] == 1
  bool main_graph_uses_branch_name = false;
};

// x -> Shape -> Gather(axis) -> Equal 1 -> Cast bool -> If
//   then: doubled = x * two (a branch initializer); then_out = doubled + x   (3x)
//   else: returns its initializer `five` (a value no branch node produces)
// -> Relu -> z (+ Identity(x) named "doubled" when main_graph_uses_branch_name)
std::string make_if_model(const TestModelOptions& options) {
  onnx::ModelProto model;
  model.set_ir_version(7);
  model.add_opset_import()->set_version(14);
  auto& graph = *model.mutable_graph();
  graph.set_name("if_test");
  set_float_value_info(*graph.add_input(), "x", options.input_dims);
  add_int64_constant(graph, "axis", {options.condition_axis}, true);
  add_int64_constant(graph, "one", {1}, true);
  add_node(graph, "Shape", {"x"}, "shape");
  add_node(graph, "Gather", {"shape", "axis"}, "dim");
  add_node(graph, "Equal", {"dim", "one"}, "is_one");
  auto* cast = add_node(graph, "Cast", {"is_one"}, "condition");
  auto* to = cast->add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(onnx::TensorProto::BOOL);

  auto* if_node = add_node(graph, "If", {"condition"}, "y");
  auto* then_attribute = if_node->add_attribute();
  then_attribute->set_name("then_branch");
  then_attribute->set_type(onnx::AttributeProto::GRAPH);
  auto& then_branch = *then_attribute->mutable_g();
  then_branch.set_name("then");
  auto* two = then_branch.add_initializer();
  two->set_name("two");
  two->set_data_type(onnx::TensorProto::FLOAT);
  const float two_value = 2.f;
  two->set_raw_data(&two_value, sizeof(two_value));
  add_node(then_branch, "Mul", {"x", "two"}, "doubled");
  add_node(then_branch, "Add", {"doubled", "x"}, "then_out");
  set_float_value_info(*then_branch.add_output(), "then_out", {});
  auto* else_attribute = if_node->add_attribute();
  else_attribute->set_name("else_branch");
  else_attribute->set_type(onnx::AttributeProto::GRAPH);
  auto& else_branch = *else_attribute->mutable_g();
  else_branch.set_name("else");
  auto* five = else_branch.add_initializer();
  five->set_name("five");
  five->set_data_type(onnx::TensorProto::FLOAT);
  const float five_value = 5.f;
  five->set_raw_data(&five_value, sizeof(five_value));
  set_float_value_info(*else_branch.add_output(), "five", {});

  if (options.main_graph_uses_branch_name) {
    add_node(graph, "Relu", {"y"}, "relu");
    add_node(graph, "Identity", {"x"}, "doubled");
    add_node(graph, "Add", {"relu", "doubled"}, "z");
  } else {
    add_node(graph, "Relu", {"y"}, "z");
  }
  set_float_value_info(*graph.add_output(), "z", {});
  std::string bytes;
  model.SerializeToString(&bytes);
  return bytes;
}

int count_ops(const std::string& model_bytes, const std::string& op) {
  onnx::ModelProto model;
  EXPECT_TRUE(model.ParseFromString(model_bytes));
  int count = 0;
  for (const auto& node : model.graph().node()) count += node.op_type() == op ? 1 : 0;
  return count;
}

NdArray<float> run_model(const std::string& bytes, const NdArray<float>& input) {
  runtime::OnnxSession session(runtime::ModelBuffer{bytes, "test"}, runtime::SessionConfig{});
  return session.run({{session.inputs()[0].name, &input}}, {session.outputs()[0].name}).front();
}

NdArray<float> ramp(std::vector<std::size_t> shape) {
  NdArray<float> array(std::move(shape));
  for (std::size_t i = 0; i < array.size(); ++i) array(i) = static_cast<float>(i) - 3.5f;
  return array;
}

TEST(ConstantIfInlining, StaticDimensionConditionTakesTheThenBranch) {
  const std::string original = make_if_model({});
  const auto inlined = inline_constant_ifs(original, "if_test");
  EXPECT_EQ(inlined.ifs_inlined, 1);
  EXPECT_EQ(inlined.ifs_kept, 0);
  EXPECT_EQ(count_ops(inlined.model, "If"), 0);
  // The condition's arithmetic is dead once the If is gone.
  EXPECT_EQ(count_ops(inlined.model, "Shape"), 0);
  EXPECT_EQ(count_ops(inlined.model, "Equal"), 0);
  EXPECT_GE(inlined.nodes_removed, 4);
  const NdArray<float> input = ramp({2, 1, 4});
  const NdArray<float> expected = run_model(original, input);
  const NdArray<float> actual = run_model(inlined.model, input);
  EXPECT_EQ(expected.values(), actual.values());
  EXPECT_FLOAT_EQ(actual(7), 3.f * 3.5f);  // relu(3x) of the last element
  EXPECT_FLOAT_EQ(actual(0), 0.f);
}

TEST(ConstantIfInlining, FalseConditionReturningAnInitializerGetsAnIdentity) {
  TestModelOptions options;
  options.input_dims = {"2", "3", "4"};  // Shape(x)[1] == 3: the else branch, which returns 5
  const std::string original = make_if_model(options);
  const auto inlined = inline_constant_ifs(original, "if_test");
  EXPECT_EQ(inlined.ifs_inlined, 1);
  EXPECT_EQ(count_ops(inlined.model, "If"), 0);
  EXPECT_EQ(count_ops(inlined.model, "Identity"), 1);
  const NdArray<float> input = ramp({2, 3, 4});
  const NdArray<float> actual = run_model(inlined.model, input);
  EXPECT_EQ(run_model(original, input).values(), actual.values());
  ASSERT_EQ(actual.size(), 1u);
  EXPECT_FLOAT_EQ(actual(0), 5.f);
}

TEST(ConstantIfInlining, BranchNamesThatCollideWithTheMainGraphAreRenamed) {
  TestModelOptions options;
  options.main_graph_uses_branch_name = true;
  const std::string original = make_if_model(options);
  const auto inlined = inline_constant_ifs(original, "if_test");
  ASSERT_EQ(inlined.ifs_inlined, 1);
  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(inlined.model));
  std::set<std::string> outputs;
  for (const auto& node : model.graph().node()) {
    for (const auto& output : node.output()) {
      EXPECT_TRUE(outputs.insert(output).second) << "defined twice: " << output;
    }
  }
  EXPECT_EQ(model.graph().initializer_size(), 1);  // the branch's `two`, hoisted
  const NdArray<float> input = ramp({2, 1, 4});
  const NdArray<float> actual = run_model(inlined.model, input);
  // (ONNX Runtime refuses the original: the clash breaks single assignment across scopes.)
  EXPECT_FLOAT_EQ(actual(7), 3.f * 3.5f + 3.5f);  // relu(3x) + x
  EXPECT_FLOAT_EQ(actual(0), -3.5f);
}

TEST(ConstantIfInlining, ConditionOnASymbolicDimensionIsKept) {
  TestModelOptions options;
  options.input_dims = {"batch", "1", "4"};
  options.condition_axis = 0;  // Shape(x)[0] == 1 depends on the batch the caller sends
  const std::string original = make_if_model(options);
  const auto inlined = inline_constant_ifs(original, "if_test");
  EXPECT_EQ(inlined.ifs_inlined, 0);
  EXPECT_EQ(inlined.ifs_kept, 1);
  EXPECT_EQ(inlined.model, original);
}

// Numbers on real audio: stages/accelerator_model_test.cpp (fp32 bit-identical).
TEST(ConstantIfInlining, SegmentationModelLosesItsIfAndTheRewriteIsIdempotent) {
  PARLEY_REQUIRE_SHARED(path, "models/segmentation-3.0-fp16.onnx");
  const std::string original = read_model_bytes(path);
  ASSERT_EQ(count_ops(original, "If"), 1);
  const auto inlined = inline_constant_ifs(original, path.string());
  EXPECT_EQ(inlined.ifs_inlined, 1);
  EXPECT_EQ(inlined.ifs_kept, 0);
  EXPECT_EQ(count_ops(inlined.model, "If"), 0);
  // The condition's Shape, Gather, Equal and Cast.
  EXPECT_GE(inlined.nodes_removed, 4);
  EXPECT_EQ(count_ops(inlined.model, "Conv"), count_ops(original, "Conv") + 1);

  const auto again = inline_constant_ifs(inlined.model, path.string());
  EXPECT_EQ(again.ifs_inlined, 0);
  EXPECT_EQ(again.model, inlined.model);
}

TEST(ConstantIfInlining, IfOnARuntimeInputIsKeptAndTheModelUnchanged) {
  // Silero VAD branches on its `sr` input (8 or 16 kHz): nothing can be proven.
  PARLEY_REQUIRE_SHARED(path, "models/silero_vad.onnx");
  const std::string original = read_model_bytes(path);
  const auto inlined = inline_constant_ifs(original, path.string());
  EXPECT_EQ(inlined.ifs_inlined, 0);
  EXPECT_EQ(inlined.ifs_kept, 1);
  EXPECT_EQ(inlined.model, original);
}

TEST(ConstantIfInlining, GarbageIsAnErrorNamingTheModel) {
  try {
    inline_constant_ifs("definitely not protobuf \xff\xff\xff", "junk.onnx");
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("junk.onnx"), std::string::npos);
  }
}

}  // namespace
}  // namespace parley::graph
