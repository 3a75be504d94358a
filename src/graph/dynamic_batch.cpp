#include "graph/dynamic_batch.h"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "graph/graph_edit.h"

namespace parley::graph {
namespace {

constexpr const char* kBatchSymbol = "batch";

// The first element of a constant int64 shape tensor, when it has one.
std::optional<std::int64_t> leading_element(const onnx::TensorProto& tensor) {
  if (tensor.data_type() != onnx::TensorProto::INT64) return std::nullopt;
  if (tensor.int64_data_size() > 0) return tensor.int64_data(0);
  if (tensor.raw_data().size() >= sizeof(std::int64_t)) {
    std::int64_t value = 0;
    std::memcpy(&value, tensor.raw_data().data(), sizeof(value));
    return value;
  }
  return std::nullopt;
}

void clear_subgraph_shapes(onnx::GraphProto& graph) {
  for (auto& node : *graph.mutable_node()) {
    for (auto& attribute : *node.mutable_attribute()) {
      std::vector<onnx::GraphProto*> subgraphs;
      if (attribute.has_g()) subgraphs.push_back(attribute.mutable_g());
      for (auto& subgraph : *attribute.mutable_graphs()) subgraphs.push_back(&subgraph);
      for (auto* subgraph : subgraphs) {
        subgraph->clear_value_info();
        for (auto& output : *subgraph->mutable_output()) {
          if (output.type().has_tensor_type()) {
            output.mutable_type()->mutable_tensor_type()->clear_shape();
          }
        }
        clear_subgraph_shapes(*subgraph);
      }
    }
  }
}

// Why a Reshape/Expand would pin the batch, or "".
std::string pinned_batch(const onnx::GraphProto& graph) {
  std::map<std::string, std::int64_t> leading;  // constant shape tensors' first element
  for (const auto& initializer : graph.initializer()) {
    if (auto value = leading_element(initializer)) leading[initializer.name()] = *value;
  }
  std::set<std::string> from_input;
  for (const auto& input : graph.input()) from_input.insert(input.name());
  for (const auto& node : graph.node()) {
    if (node.op_type() == "Constant" && node.output_size() == 1) {
      for (const auto& attribute : node.attribute()) {
        if (attribute.name() != "value") continue;
        if (auto value = leading_element(attribute.t())) leading[node.output(0)] = *value;
      }
    }
    bool flows = false;
    for (const auto& input : node.input()) flows |= from_input.count(input) > 0;
    if (!flows) continue;
    for (const auto& output : node.output()) from_input.insert(output);
    if ((node.op_type() == "Reshape" || node.op_type() == "Expand") && node.input_size() > 1 &&
        from_input.count(node.input(0)) > 0) {
      const auto found = leading.find(node.input(1));
      if (found != leading.end() && found->second != 0 && found->second != -1) {
        return fmt::format(
            "node '{}' ({}) gives the batch-carrying tensor '{}' a constant leading size {}",
            node.name(), node.op_type(), node.input(0), found->second);
      }
    }
  }
  return {};
}

}  // namespace

DynamicBatch make_batch_dynamic(const std::string& model_bytes, const std::string& model_name) {
  onnx::ModelProto model = parse_model(model_bytes, model_name);
  onnx::GraphProto& graph = *model.mutable_graph();
  DynamicBatch result;
  result.model = model_bytes;
  std::set<std::string> initializers;
  for (const auto& initializer : graph.initializer()) initializers.insert(initializer.name());
  std::vector<onnx::TensorShapeProto_Dimension*> to_change;
  auto check = [&](onnx::ValueInfoProto& value, const char* kind) -> bool {
    if (initializers.count(value.name()) > 0) return true;  // an old-style initializer input
    if (!value.type().has_tensor_type() || !value.type().tensor_type().has_shape() ||
        value.type().tensor_type().shape().dim_size() == 0) {
      result.refusal = fmt::format("{} '{}' declares no batch dimension", kind, value.name());
      return false;
    }
    auto* dim = value.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0);
    if (dim->has_dim_value()) {
      if (dim->dim_value() != 1) {
        result.refusal =
            fmt::format("{} '{}' has its batch fixed to {}", kind, value.name(), dim->dim_value());
        return false;
      }
      to_change.push_back(dim);
    }
    return true;
  };
  for (auto& input : *graph.mutable_input()) {
    if (!check(input, "input")) return result;
  }
  for (auto& output : *graph.mutable_output()) {
    if (!check(output, "output")) return result;
  }
  if (to_change.empty()) {
    result.dynamic = true;
    return result;
  }
  if (auto why = pinned_batch(graph); !why.empty()) {
    result.refusal = why;
    return result;
  }
  for (auto* dim : to_change) {
    dim->clear_dim_value();
    dim->set_dim_param(kBatchSymbol);
  }
  graph.clear_value_info();
  clear_subgraph_shapes(graph);
  bool has_metadata = false;
  for (auto& property : *model.mutable_metadata_props()) {
    if (property.key() == "parley.batch") {
      property.set_value("dynamic");
      has_metadata = true;
    }
  }
  if (!has_metadata) {
    auto* property = model.add_metadata_props();
    property->set_key("parley.batch");
    property->set_value("dynamic");
  }
  result.model = serialize_model(model, model_name);
  result.changed = true;
  result.dynamic = true;
  return result;
}

}  // namespace parley::graph
