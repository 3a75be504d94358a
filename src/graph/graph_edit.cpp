#include "graph/graph_edit.h"

#include <cstring>
#include <vector>

#include "core/error.h"

namespace parley::models {

onnx::ModelProto parse_model(const std::string& model_bytes, const std::string& model_name) {
  onnx::ModelProto model;
  if (!model.ParseFromString(model_bytes)) {
    fail(
        "{}: not a readable ONNX model (the file may be damaged; `parley models verify` checks "
        "it)",
        model_name);
  }
  return model;
}

std::string serialize_model(const onnx::ModelProto& model, const std::string& model_name) {
  std::string bytes;
  if (!model.SerializeToString(&bytes)) {
    fail("{}: could not serialize the rewritten model", model_name);
  }
  return bytes;
}

ConstantTensors::ConstantTensors(const onnx::GraphProto& graph) {
  for (const auto& node : graph.node()) {
    if (node.op_type() != "Constant" || node.output_size() == 0) continue;
    for (const auto& attribute : node.attribute()) {
      if (attribute.name() == "value" && attribute.has_t())
        tensors_[node.output(0)] = &attribute.t();
    }
  }
  for (const auto& initializer : graph.initializer()) tensors_[initializer.name()] = &initializer;
}

const onnx::TensorProto* ConstantTensors::find(const std::string& name) const {
  const auto found = tensors_.find(name);
  return found == tensors_.end() ? nullptr : found->second;
}

std::optional<std::vector<std::int64_t>> ConstantTensors::ints(const std::string& name) const {
  const onnx::TensorProto* tensor = find(name);
  if (tensor == nullptr || tensor->data_type() != onnx::TensorProto::INT64) return std::nullopt;
  std::vector<std::int64_t> values;
  if (!tensor->raw_data().empty()) {
    values.resize(tensor->raw_data().size() / sizeof(std::int64_t));
    std::memcpy(values.data(), tensor->raw_data().data(), values.size() * sizeof(std::int64_t));
  } else {
    values.assign(tensor->int64_data().begin(), tensor->int64_data().end());
  }
  return values;
}

void collect_reads(const onnx::NodeProto& node, std::set<std::string>& reads) {
  for (const auto& input : node.input()) {
    if (!input.empty()) reads.insert(input);
  }
  for (const auto& attribute : node.attribute()) {
    if (attribute.has_g()) {
      for (const auto& inner : attribute.g().node()) collect_reads(inner, reads);
    }
    for (const auto& graph : attribute.graphs()) {
      for (const auto& inner : graph.node()) collect_reads(inner, reads);
    }
  }
}

void collect_names(const onnx::GraphProto& graph, std::set<std::string>& names) {
  for (const auto& value : graph.input()) names.insert(value.name());
  for (const auto& value : graph.output()) names.insert(value.name());
  for (const auto& value : graph.value_info()) names.insert(value.name());
  for (const auto& initializer : graph.initializer()) names.insert(initializer.name());
  for (const auto& node : graph.node()) {
    for (const auto& name : node.input()) names.insert(name);
    for (const auto& name : node.output()) names.insert(name);
    for (const auto& attribute : node.attribute()) {
      if (attribute.has_g()) collect_names(attribute.g(), names);
      for (const auto& subgraph : attribute.graphs()) collect_names(subgraph, names);
    }
  }
  names.erase("");
}

PruneCount prune_unused(onnx::GraphProto& graph) {
  PruneCount count;
  std::set<std::string> needed;
  for (const auto& output : graph.output()) needed.insert(output.name());
  std::vector<bool> keep(static_cast<std::size_t>(graph.node_size()), false);
  for (int i = graph.node_size() - 1; i >= 0; --i) {
    const onnx::NodeProto& node = graph.node(i);
    for (const auto& output : node.output()) {
      if (needed.count(output) > 0) keep[static_cast<std::size_t>(i)] = true;
    }
    if (keep[static_cast<std::size_t>(i)]) collect_reads(node, needed);
  }
  google::protobuf::RepeatedPtrField<onnx::NodeProto> kept_nodes;
  std::set<std::string> produced;
  for (int i = 0; i < graph.node_size(); ++i) {
    if (keep[static_cast<std::size_t>(i)]) {
      for (const auto& output : graph.node(i).output()) produced.insert(output);
      *kept_nodes.Add() = graph.node(i);
    } else {
      ++count.nodes;
    }
  }
  graph.mutable_node()->Swap(&kept_nodes);
  google::protobuf::RepeatedPtrField<onnx::TensorProto> kept_initializers;
  for (const auto& initializer : graph.initializer()) {
    if (needed.count(initializer.name()) > 0) {
      *kept_initializers.Add() = initializer;
    } else {
      ++count.initializers;
    }
  }
  graph.mutable_initializer()->Swap(&kept_initializers);
  google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> kept_value_info;
  for (const auto& value : graph.value_info()) {
    if (produced.count(value.name()) > 0) *kept_value_info.Add() = value;
  }
  graph.mutable_value_info()->Swap(&kept_value_info);
  return count;
}

const onnx::AttributeProto* find_attribute(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& attribute : node.attribute()) {
    if (attribute.name() == name) return &attribute;
  }
  return nullptr;
}

std::int64_t int_attribute(const onnx::NodeProto& node, const std::string& name,
                           std::int64_t fallback) {
  const auto* attribute = find_attribute(node, name);
  return attribute != nullptr ? attribute->i() : fallback;
}

}  // namespace parley::models
