#include "graph/onnx_graph.h"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "core/error.h"
#include "graph/graph_edit.h"

namespace parley::graph {
namespace {

// Float values of a constant tensor (initializer or Constant node), with its dims.
struct ConstantTensor {
  std::vector<std::int64_t> dims;
  std::vector<float> values;
};

class GraphIndex {
 public:
  GraphIndex(const onnx::GraphProto& graph, const std::string& model_name)
      : graph_(graph), model_name_(model_name), constants_(graph) {
    for (int i = 0; i < graph.node_size(); ++i) {
      for (const auto& output : graph.node(i).output()) producer_[output] = i;
    }
  }

  const onnx::NodeProto* producer(const std::string& tensor) const {
    auto found = producer_.find(tensor);
    return found == producer_.end() ? nullptr : &graph_.node(found->second);
  }
  int producer_index(const std::string& tensor) const {
    auto found = producer_.find(tensor);
    return found == producer_.end() ? -1 : found->second;
  }

  bool is_constant(const std::string& tensor) const { return constants_.contains(tensor); }

  std::optional<ConstantTensor> constant(const std::string& tensor) const {
    const onnx::TensorProto* proto = constants_.find(tensor);
    if (proto == nullptr) return std::nullopt;
    return to_floats(*proto, tensor);
  }

  std::optional<std::vector<std::int64_t>> constant_ints(const std::string& tensor) const {
    return constants_.ints(tensor);
  }

  // Non-constant tensors that `tensor` is computed from, itself included.
  std::set<std::string> dynamic_ancestors(const std::string& tensor) const {
    std::set<std::string> seen;
    std::vector<std::string> pending{tensor};
    while (!pending.empty()) {
      std::string current = std::move(pending.back());
      pending.pop_back();
      if (is_constant(current) || !seen.insert(current).second) continue;
      if (const auto* node = producer(current)) {
        for (const auto& input : node->input()) {
          if (!input.empty()) pending.push_back(input);
        }
      }
    }
    return seen;
  }

  // Indices of the nodes needed to compute `tensor`.
  std::set<int> nodes_needed_for(const std::string& tensor) const {
    std::set<int> needed;
    std::set<std::string> seen;
    std::vector<std::string> pending{tensor};
    while (!pending.empty()) {
      std::string current = std::move(pending.back());
      pending.pop_back();
      if (!seen.insert(current).second) continue;
      const int index = producer_index(current);
      if (index < 0) continue;
      needed.insert(index);
      for (const auto& input : graph_.node(index).input()) {
        if (!input.empty()) pending.push_back(input);
      }
    }
    return needed;
  }

 private:
  ConstantTensor to_floats(const onnx::TensorProto& proto, const std::string& name) const {
    if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
      fail(
          "{}: tensor '{}' is stored in an external data file; re-export the model with its "
          "weights inside the .onnx file",
          model_name_, name);
    }
    if (proto.data_type() != onnx::TensorProto::FLOAT) {
      fail(
          "{}: tensor '{}' has ONNX element type {}, parley expects float32 weights in the "
          "final linear layer",
          model_name_, name, proto.data_type());
    }
    ConstantTensor result;
    result.dims.assign(proto.dims().begin(), proto.dims().end());
    if (!proto.raw_data().empty()) {
      result.values.resize(proto.raw_data().size() / sizeof(float));
      std::memcpy(result.values.data(), proto.raw_data().data(),
                  result.values.size() * sizeof(float));
    } else {
      result.values.assign(proto.float_data().begin(), proto.float_data().end());
    }
    std::size_t expected = 1;
    for (auto dim : result.dims) expected *= static_cast<std::size_t>(dim);
    if (result.values.size() != expected) {
      fail("{}: tensor '{}' holds {} values for dims of {} elements", model_name_, name,
           result.values.size(), expected);
    }
    return result;
  }

  const onnx::GraphProto& graph_;
  const std::string& model_name_;
  ConstantTensors constants_;
  std::map<std::string, int> producer_;
};

float float_attribute(const onnx::NodeProto& node, const std::string& name, float fallback) {
  const auto* attribute = find_attribute(node, name);
  return attribute != nullptr ? attribute->f() : fallback;
}

// Ops that only reshape a [B, ...] tensor without reordering its values.
bool is_layout_only(const std::string& op_type) {
  return op_type == "Flatten" || op_type == "Reshape" || op_type == "Squeeze" ||
         op_type == "Unsqueeze" || op_type == "Identity";
}

// First data input of a node (the others of a layout op are shapes or axes).
std::string data_input(const onnx::NodeProto& node) { return node.input(0); }

bool branch_contains(const GraphIndex& index, const std::string& from, const std::string& stop,
                     const std::string& op_type) {
  std::set<std::string> seen;
  std::vector<std::string> pending{from};
  while (!pending.empty()) {
    std::string current = std::move(pending.back());
    pending.pop_back();
    if (current == stop || index.is_constant(current) || !seen.insert(current).second) continue;
    const auto* node = index.producer(current);
    if (node == nullptr) continue;
    if (node->op_type() == op_type) return true;
    for (const auto& input : node->input()) {
      if (!input.empty()) pending.push_back(input);
    }
  }
  return false;
}

}  // namespace

std::string StatisticsPoolingSplit::to_string() const {
  return fmt::format(
      "StatisticsPoolingSplit(input={}, pooling_input={}, time_axis={}, head=linear {}->{}, "
      "output={}, trunk={} bytes)",
      features_input, pooling_input, time_axis, head.input_dim(), head.output_dim(),
      embedding_output, trunk_model.size());
}

std::string read_model_bytes(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    fail("{}: model file not found (see `parley models list` and `parley models fetch`)",
         path.string());
  }
  std::ifstream stream(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(stream)), std::istreambuf_iterator<char>());
  if (!stream.good() && !stream.eof()) fail("{}: cannot read the model file", path.string());
  return bytes;
}

StatisticsPoolingSplit split_before_statistics_pooling(const std::string& model_bytes,
                                                       const std::string& model_name) {
  onnx::ModelProto model;
  if (!model.ParseFromString(model_bytes)) {
    fail("{}: not a valid ONNX model (protobuf parse failed); is the file complete?", model_name);
  }
  const onnx::GraphProto& graph = model.graph();
  const GraphIndex index(graph, model_name);
  const std::string shape_hint =
      "parley expects a WeSpeaker-style export: feats [B,T,80] -> ... -> Concat(mean, std over "
      "time) -> Gemm -> embedding";

  std::vector<std::string> inputs;
  for (const auto& input : graph.input()) {
    if (!index.is_constant(input.name())) inputs.push_back(input.name());
  }
  if (inputs.size() != 1 || graph.output_size() != 1) {
    fail("{}: the graph has {} inputs and {} outputs, not one of each; {}", model_name,
         inputs.size(), graph.output_size(), shape_hint);
  }

  StatisticsPoolingSplit split;
  split.features_input = inputs.front();
  split.embedding_output = graph.output(0).name();

  // Walk back from the output over constant offsets (WeSpeaker subtracts `mean_vec`) to the
  // final linear layer.
  std::string tensor = split.embedding_output;
  std::vector<float> offset;  // added to the linear layer's output
  auto add_offset = [&](const ConstantTensor& constant, float sign, const std::string& name) {
    if (offset.empty()) offset.assign(constant.values.size(), 0.0f);
    if (constant.values.size() != offset.size()) {
      fail("{}: constant '{}' after the final linear layer has {} values, expected {}", model_name,
           name, constant.values.size(), offset.size());
    }
    for (std::size_t i = 0; i < offset.size(); ++i) offset[i] += sign * constant.values[i];
  };
  const onnx::NodeProto* linear = nullptr;
  while (linear == nullptr) {
    const auto* node = index.producer(tensor);
    if (node == nullptr) {
      fail("{}: found no Gemm or MatMul before the output '{}'; {}", model_name,
           split.embedding_output, shape_hint);
    }
    const std::string& op = node->op_type();
    if ((op == "Add" || op == "Sub") && node->input_size() == 2) {
      const bool first_constant = index.is_constant(node->input(0));
      const bool second_constant = index.is_constant(node->input(1));
      if (first_constant == second_constant || (op == "Sub" && first_constant)) {
        fail("{}: node '{}' ({}) after the final linear layer is not x +/- constant; {}",
             model_name, node->name(), op, shape_hint);
      }
      const std::string& constant_name = first_constant ? node->input(0) : node->input(1);
      add_offset(*index.constant(constant_name), op == "Sub" ? -1.0f : 1.0f, constant_name);
      tensor = first_constant ? node->input(1) : node->input(0);
    } else if (op == "Gemm" || op == "MatMul") {
      linear = node;
    } else {
      fail("{}: node '{}' ({}) stands between the output and the final linear layer; {}",
           model_name, node->name(), op, shape_hint);
    }
  }

  const auto weight_constant = index.constant(linear->input(1));
  if (!weight_constant || weight_constant->dims.size() != 2) {
    fail("{}: the final {} '{}' has no constant 2-D weight; {}", model_name, linear->op_type(),
         linear->name(), shape_hint);
  }
  // ONNX's MatMul and Gemm (transB=0) store [input_dim, output_dim]; transB=1 stores the
  // PyTorch layout [output_dim, input_dim].
  bool stored_transposed = true;
  float alpha = 1.0f;
  float beta = 1.0f;
  if (linear->op_type() == "Gemm") {
    if (int_attribute(*linear, "transA", 0) != 0) {
      fail("{}: the final Gemm '{}' transposes its input (transA=1); {}", model_name,
           linear->name(), shape_hint);
    }
    stored_transposed = int_attribute(*linear, "transB", 0) == 0;
    alpha = float_attribute(*linear, "alpha", 1.0f);
    beta = float_attribute(*linear, "beta", 1.0f);
  }
  const auto rows = static_cast<std::size_t>(weight_constant->dims[0]);
  const auto cols = static_cast<std::size_t>(weight_constant->dims[1]);
  const std::size_t output_dim = stored_transposed ? cols : rows;
  const std::size_t input_dim = stored_transposed ? rows : cols;
  split.head.weight = NdArray<float>({output_dim, input_dim});
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      const float value = alpha * weight_constant->values[r * cols + c];
      if (stored_transposed) {
        split.head.weight(c, r) = value;
      } else {
        split.head.weight(r, c) = value;
      }
    }
  }
  split.head.bias.assign(output_dim, 0.0f);
  if (linear->op_type() == "Gemm" && linear->input_size() > 2 && !linear->input(2).empty()) {
    const auto bias = index.constant(linear->input(2));
    if (!bias || bias->values.size() != output_dim) {
      fail("{}: the final Gemm '{}' has a bias that is not a constant vector of {} values",
           model_name, linear->name(), output_dim);
    }
    for (std::size_t i = 0; i < output_dim; ++i) split.head.bias[i] = beta * bias->values[i];
  }
  if (!offset.empty()) {
    if (offset.size() != output_dim) {
      fail("{}: {} constant values follow a linear layer of {} outputs", model_name, offset.size(),
           output_dim);
    }
    for (std::size_t i = 0; i < output_dim; ++i) split.head.bias[i] += offset[i];
  }

  // The linear layer's input: layout-only ops back to Concat(mean, std).
  tensor = linear->input(0);
  const onnx::NodeProto* concat = nullptr;
  while (concat == nullptr) {
    const auto* node = index.producer(tensor);
    if (node == nullptr) {
      fail("{}: the final linear layer is not fed by a Concat of pooled statistics; {}", model_name,
           shape_hint);
    }
    if (node->op_type() == "Concat") {
      concat = node;
    } else if (is_layout_only(node->op_type())) {
      tensor = data_input(*node);
    } else {
      fail(
          "{}: node '{}' ({}) stands between the pooled statistics and the final linear layer; "
          "{}",
          model_name, node->name(), node->op_type(), shape_hint);
    }
  }
  const std::int64_t concat_axis = int_attribute(*concat, "axis", 0);
  if (concat->input_size() != 2 || (concat_axis != 1 && concat_axis != -1)) {
    fail(
        "{}: the statistics Concat '{}' joins {} tensors on axis {}, expected mean and std on "
        "axis 1; {}",
        model_name, concat->name(), concat->input_size(), concat_axis, shape_hint);
  }

  // The pooling input is the last non-constant tensor that both statistics are computed from.
  const auto mean_ancestors = index.dynamic_ancestors(concat->input(0));
  const auto std_ancestors = index.dynamic_ancestors(concat->input(1));
  std::string pooling_input;
  int latest = -2;
  for (const auto& candidate : std_ancestors) {
    if (mean_ancestors.count(candidate) == 0) continue;
    const int position = index.producer_index(candidate);
    if (position > latest) {
      latest = position;
      pooling_input = candidate;
    }
  }
  // An exporter may share the mean between both statistics: step back over it.
  while (const auto* node = index.producer(pooling_input)) {
    if (node->op_type() != "ReduceMean") break;
    pooling_input = node->input(0);
  }
  if (pooling_input.empty() || pooling_input == split.features_input) {
    fail("{}: cannot find the tensor that the pooled statistics are computed from; {}", model_name,
         shape_hint);
  }
  if (branch_contains(index, concat->input(0), pooling_input, "Sqrt") ||
      !branch_contains(index, concat->input(1), pooling_input, "Sqrt")) {
    fail(
        "{}: the statistics Concat '{}' is not (mean, std): parley expects the mean first and "
        "the standard deviation (a Sqrt) second, as WeSpeaker's TSTP writes them",
        model_name, concat->name());
  }

  // The mean: a ReduceMean of the pooling input, whose axis is the time axis.
  bool found_mean = false;
  for (const auto& node : graph.node()) {
    if (node.op_type() != "ReduceMean" || node.input(0) != pooling_input) continue;
    if (mean_ancestors.count(node.output(0)) == 0) continue;
    std::vector<std::int64_t> axes;
    if (const auto* attribute = find_attribute(node, "axes")) {
      axes.assign(attribute->ints().begin(), attribute->ints().end());
    } else if (node.input_size() > 1) {
      axes = index.constant_ints(node.input(1)).value_or(std::vector<std::int64_t>{});
    }
    if (axes.size() != 1) {
      fail("{}: the mean '{}' reduces {} axes, expected the time axis only", model_name,
           node.name(), axes.size());
    }
    split.time_axis = axes.front();
    found_mean = true;
  }
  if (!found_mean) {
    fail("{}: no ReduceMean over time of '{}' feeds the statistics; {}", model_name, pooling_input,
         shape_hint);
  }
  split.pooling_input = pooling_input;

  // The trunk: the same model with the pooling input as its only output and everything that
  // only the head needed removed.
  onnx::ModelProto trunk = model;
  onnx::GraphProto* trunk_graph = trunk.mutable_graph();
  const auto needed = index.nodes_needed_for(pooling_input);
  std::set<std::string> used_tensors;
  google::protobuf::RepeatedPtrField<onnx::NodeProto> kept_nodes;
  for (int i = 0; i < graph.node_size(); ++i) {
    if (needed.count(i) == 0) continue;
    *kept_nodes.Add() = graph.node(i);
    for (const auto& input : graph.node(i).input()) used_tensors.insert(input);
  }
  trunk_graph->mutable_node()->Swap(&kept_nodes);
  google::protobuf::RepeatedPtrField<onnx::TensorProto> kept_initializers;
  for (const auto& initializer : graph.initializer()) {
    if (used_tensors.count(initializer.name()) > 0) *kept_initializers.Add() = initializer;
  }
  trunk_graph->mutable_initializer()->Swap(&kept_initializers);
  // Older exports also list initializers as graph inputs; a removed one must not stay there,
  // or ONNX Runtime would ask the caller to feed it.
  google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> kept_inputs;
  for (const auto& input : graph.input()) {
    if (!index.is_constant(input.name()) || used_tensors.count(input.name()) > 0) {
      *kept_inputs.Add() = input;
    }
  }
  trunk_graph->mutable_input()->Swap(&kept_inputs);
  trunk_graph->clear_output();
  onnx::ValueInfoProto* output = trunk_graph->add_output();
  output->set_name(pooling_input);
  bool described = false;
  for (const auto& info : graph.value_info()) {
    if (info.name() == pooling_input) {
      *output = info;
      described = true;
    }
  }
  if (!described) {
    output->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  }
  if (!trunk.SerializeToString(&split.trunk_model)) {
    fail("{}: could not serialize the trunk of the split model", model_name);
  }
  return split;
}

namespace {

bool is_float16(const onnx::TensorProto& tensor) {
  return tensor.data_type() == onnx::TensorProto::FLOAT16;
}

bool graph_has_float16_constants(const onnx::GraphProto& graph) {
  if (std::any_of(graph.initializer().begin(), graph.initializer().end(), is_float16)) return true;
  return std::any_of(graph.node().begin(), graph.node().end(), [](const onnx::NodeProto& node) {
    if (node.op_type() != "Constant") return false;
    const onnx::AttributeProto* value = find_attribute(node, "value");
    return value != nullptr && value->has_t() && is_float16(value->t());
  });
}

}  // namespace

bool has_float16_constants(const std::string& model_bytes, const std::string& model_name) {
  return graph_has_float16_constants(parse_model(model_bytes, model_name).graph());
}

bool computes_filters_in_float16(const std::string& model_bytes, const std::string& model_name) {
  const onnx::ModelProto model = parse_model(model_bytes, model_name);
  const onnx::GraphProto& graph = model.graph();
  const bool has_sin =
      std::any_of(graph.node().begin(), graph.node().end(),
                  [](const onnx::NodeProto& node) { return node.op_type() == "Sin"; });
  return has_sin && graph_has_float16_constants(graph);
}

}  // namespace parley::graph
