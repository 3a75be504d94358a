#include "graph/graph_edit.h"

#include <fmt/format.h>

#include <cstring>
#include <utility>
#include <vector>

#include "core/error.h"

namespace parley::graph {

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

std::int64_t default_domain_opset(const onnx::ModelProto& model) {
  for (const auto& opset : model.opset_import()) {
    if (opset.domain().empty() || opset.domain() == "ai.onnx") return opset.version();
  }
  return 1;
}

GraphAppender::GraphAppender(onnx::GraphProto& graph, std::int64_t opset, std::string prefix)
    : graph_(graph), opset_(opset), prefix_(std::move(prefix)) {
  collect_names(graph, taken_);
}

std::string GraphAppender::fresh(const std::string& stem) {
  std::string name = prefix_ + "/" + stem;
  for (int suffix = 1; taken_.count(name) > 0; ++suffix) {
    name = fmt::format("{}/{}_{}", prefix_, stem, suffix);
  }
  taken_.insert(name);
  return name;
}

std::string GraphAppender::node(const std::string& op, const std::vector<std::string>& inputs,
                                const std::string& stem) {
  auto* added = graph_.add_node();
  added->set_op_type(op);
  std::string output = fresh(stem);
  added->set_name(output);
  for (const auto& input : inputs) added->add_input(input);
  added->add_output(output);
  last_ = added;
  return output;
}

void GraphAppender::int_attribute(const std::string& name, std::int64_t value) {
  auto* attribute = last_->add_attribute();
  attribute->set_name(name);
  attribute->set_type(onnx::AttributeProto::INT);
  attribute->set_i(value);
}

void GraphAppender::ints_attribute(const std::string& name,
                                   const std::vector<std::int64_t>& values) {
  auto* attribute = last_->add_attribute();
  attribute->set_name(name);
  attribute->set_type(onnx::AttributeProto::INTS);
  for (const auto value : values) attribute->add_ints(value);
}

std::string GraphAppender::floats(const std::string& stem, const std::vector<std::int64_t>& dims,
                                  const std::vector<float>& values) {
  auto* tensor = graph_.add_initializer();
  std::string name = fresh(stem);
  tensor->set_name(name);
  tensor->set_data_type(onnx::TensorProto::FLOAT);
  for (const auto dim : dims) tensor->add_dims(dim);
  tensor->set_raw_data(values.data(), values.size() * sizeof(float));
  return name;
}

std::string GraphAppender::doubles(const std::string& stem, const std::vector<std::int64_t>& dims,
                                   const std::vector<double>& values) {
  auto* tensor = graph_.add_initializer();
  std::string name = fresh(stem);
  tensor->set_name(name);
  tensor->set_data_type(onnx::TensorProto::DOUBLE);
  for (const auto dim : dims) tensor->add_dims(dim);
  tensor->set_raw_data(values.data(), values.size() * sizeof(double));
  return name;
}

std::string GraphAppender::ints(const std::string& stem, const std::vector<std::int64_t>& values) {
  auto* tensor = graph_.add_initializer();
  std::string name = fresh(stem);
  tensor->set_name(name);
  tensor->set_data_type(onnx::TensorProto::INT64);
  tensor->add_dims(static_cast<std::int64_t>(values.size()));
  tensor->set_raw_data(values.data(), values.size() * sizeof(std::int64_t));
  return name;
}

std::string GraphAppender::int_scalar(const std::string& stem, std::int64_t value) {
  auto* tensor = graph_.add_initializer();
  std::string name = fresh(stem);
  tensor->set_name(name);
  tensor->set_data_type(onnx::TensorProto::INT64);
  tensor->set_raw_data(&value, sizeof(value));
  return name;
}

std::string GraphAppender::mean_over_last_axis(const std::string& input, const std::string& stem) {
  if (opset_ >= 18) {
    const std::string axes = ints(stem + "_axes", {-1});
    node("ReduceMean", {input, axes}, stem);
  } else {
    node("ReduceMean", {input}, stem);
    ints_attribute("axes", {-1});
  }
  int_attribute("keepdims", 1);
  return last_->output(0);
}

std::string GraphAppender::cast(const std::string& input, int to, const std::string& stem) {
  std::string output = node("Cast", {input}, stem);
  int_attribute("to", to);
  return output;
}

namespace {

void set_float_type(onnx::ValueInfoProto& value, const std::vector<std::string>& dims) {
  auto* tensor = value.mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::FLOAT);
  for (const auto& dim : dims) {
    auto* shape_dim = tensor->mutable_shape()->add_dim();
    if (dim == "1") {
      shape_dim->set_dim_value(1);
    } else {
      shape_dim->set_dim_param(dim);
    }
  }
}

}  // namespace

void GraphAppender::float_input(const std::string& name, const std::vector<std::string>& dims) {
  auto* input = graph_.add_input();
  input->set_name(name);
  taken_.insert(name);
  set_float_type(*input, dims);
}

void GraphAppender::float_output(const std::string& name, const std::vector<std::string>& dims) {
  auto* output = graph_.add_output();
  output->set_name(name);
  taken_.insert(name);
  set_float_type(*output, dims);
}

std::string GraphAppender::name_output(const std::string& name) {
  last_->set_output(0, name);
  taken_.insert(name);
  return name;
}

}  // namespace parley::graph
