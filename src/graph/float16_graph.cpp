#include "graph/float16_graph.h"

#include <onnxruntime_cxx_api.h>

#include <cstring>
#include <set>
#include <vector>

#include "core/error.h"
#include "graph/graph_edit.h"

namespace parley::graph {

namespace {

// Operators whose every floating-point operand may be float16 (ONNX's type constraints, and
// ONNX Runtime's CUDA kernels exist for them), plus the shape operators that pass a tensor on.
const std::set<std::string> kFloat16Operators = {
    "Abs",         "Add",
    "AveragePool", "BatchNormalization",
    "Cast",        "Concat",
    "Constant",    "Conv",
    "Div",         "Flatten",
    "Gemm",        "GRU",
    "Identity",    "InstanceNormalization",
    "LSTM",        "LeakyRelu",
    "LogSoftmax",  "MatMul",
    "MaxPool",     "Mul",
    "Relu",        "Reshape",
    "Shape",       "Sigmoid",
    "Slice",       "Softmax",
    "Squeeze",     "Sub",
    "Tanh",        "Transpose",
    "Unsqueeze",
};

constexpr auto kFloat = onnx::TensorProto::FLOAT;
constexpr auto kFloat16 = onnx::TensorProto::FLOAT16;

// Rewrites a float32 tensor's values as float16 (rounded to nearest even).
void to_float16(onnx::TensorProto& tensor) {
  std::vector<float> values;
  if (tensor.has_raw_data()) {
    values.resize(tensor.raw_data().size() / sizeof(float));
    std::memcpy(values.data(), tensor.raw_data().data(), values.size() * sizeof(float));
  } else {
    values.assign(tensor.float_data().begin(), tensor.float_data().end());
  }
  std::vector<std::uint16_t> halves;
  halves.reserve(values.size());
  for (const float value : values) halves.push_back(Ort::Float16_t(value).val);
  tensor.clear_float_data();
  tensor.clear_raw_data();
  tensor.set_data_type(kFloat16);
  tensor.set_raw_data(halves.data(), halves.size() * sizeof(std::uint16_t));
}

bool is_float(const onnx::ValueInfoProto& value) {
  return value.type().has_tensor_type() && value.type().tensor_type().elem_type() == kFloat;
}

void set_float16(onnx::ValueInfoProto& value) {
  value.mutable_type()->mutable_tensor_type()->set_elem_type(kFloat16);
}

onnx::NodeProto make_cast(const std::string& input, const std::string& output, int to,
                          const std::string& name) {
  onnx::NodeProto cast;
  cast.set_op_type("Cast");
  cast.set_name(name);
  cast.add_input(input);
  cast.add_output(output);
  auto* attribute = cast.add_attribute();
  attribute->set_name("to");
  attribute->set_type(onnx::AttributeProto::INT);
  attribute->set_i(to);
  return cast;
}

std::string unused_name(const std::string& base, std::set<std::string>& names) {
  std::string name = base;
  for (int suffix = 1; names.count(name) > 0; ++suffix) name = base + "_" + std::to_string(suffix);
  names.insert(name);
  return name;
}

}  // namespace

bool float16_graph_suits(runtime::ProviderId provider) {
  return provider != runtime::ProviderId::kCpu && !runtime::traits(provider).static_shapes;
}

Float16Graph convert_to_float16(const std::string& model_bytes, const std::string& model_name) {
  onnx::ModelProto model = parse_model(model_bytes, model_name);
  onnx::GraphProto& graph = *model.mutable_graph();
  for (const auto& node : graph.node()) {
    if (kFloat16Operators.count(node.op_type()) == 0) {
      fail(
          "{}: cannot run in float16: operator {} ('{}') is not known to take float16 operands "
          "(run this model in float32)",
          model_name, node.op_type(), node.name());
    }
  }
  Float16Graph result;
  std::set<std::string> initializers;
  for (auto& initializer : *graph.mutable_initializer()) {
    initializers.insert(initializer.name());
    if (initializer.data_type() != kFloat) continue;
    to_float16(initializer);
    ++result.tensors_converted;
  }
  for (auto& node : *graph.mutable_node()) {
    for (auto& attribute : *node.mutable_attribute()) {
      if (node.op_type() == "Constant" && attribute.has_t() &&
          attribute.t().data_type() == kFloat) {
        to_float16(*attribute.mutable_t());
        ++result.tensors_converted;
      }
      if (node.op_type() == "Cast" && attribute.name() == "to" && attribute.i() == kFloat) {
        attribute.set_i(kFloat16);
      }
    }
  }
  for (auto& value : *graph.mutable_value_info()) {
    if (is_float(value)) set_float16(value);
  }

  std::set<std::string> names;
  collect_names(graph, names);
  std::vector<onnx::NodeProto> input_casts;
  for (auto& input : *graph.mutable_input()) {
    if (!is_float(input)) continue;
    if (initializers.count(input.name()) > 0) {  // a weight listed as an input (old exports)
      set_float16(input);
      continue;
    }
    const std::string half = unused_name(input.name() + "_float16", names);
    for (auto& node : *graph.mutable_node()) {
      for (auto& name : *node.mutable_input()) {
        if (name == input.name()) name = half;
      }
    }
    input_casts.push_back(make_cast(input.name(), half, kFloat16, half + "_cast"));
  }
  std::vector<onnx::NodeProto> output_casts;
  for (const auto& output : graph.output()) {
    if (!is_float(output)) continue;
    const std::string half = unused_name(output.name() + "_float16", names);
    for (auto& node : *graph.mutable_node()) {
      for (auto& name : *node.mutable_output()) {
        if (name == output.name()) name = half;
      }
      for (auto& name : *node.mutable_input()) {
        if (name == output.name()) name = half;  // an output that later nodes also read
      }
    }
    output_casts.push_back(make_cast(half, output.name(), kFloat, half + "_cast"));
  }
  // Nodes stay topologically sorted: the input casts first, the output casts last.
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (auto& cast : input_casts) *nodes.Add() = std::move(cast);
  for (auto& node : *graph.mutable_node()) *nodes.Add() = std::move(node);
  for (auto& cast : output_casts) *nodes.Add() = std::move(cast);
  graph.mutable_node()->Swap(&nodes);
  result.casts_added = static_cast<int>(input_casts.size() + output_casts.size());
  result.model = serialize_model(model, model_name);
  return result;
}

}  // namespace parley::graph
