#include "graph/first_convolution_split.h"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <map>
#include <set>
#include <vector>

#include "graph/constant_if_inlining.h"
#include "graph/graph_edit.h"

namespace parley::graph {
namespace {

// Nodes of the main graph that read each tensor (also through their subgraphs).
std::map<std::string, std::vector<int>> readers_of(const onnx::GraphProto& graph) {
  std::map<std::string, std::vector<int>> readers;
  for (int i = 0; i < graph.node_size(); ++i) {
    std::set<std::string> reads;
    collect_reads(graph.node(i), reads);
    for (const auto& name : reads) readers[name].push_back(i);
  }
  return readers;
}

// The one float32 value of a one-element constant, or nullopt.
std::optional<float> scalar_float(const ConstantTensors& constants, const std::string& name) {
  const onnx::TensorProto* tensor = constants.find(name);
  if (tensor == nullptr || tensor->data_type() != onnx::TensorProto::FLOAT) return std::nullopt;
  if (tensor->data_location() == onnx::TensorProto::EXTERNAL) return std::nullopt;
  if (tensor->raw_data().size() == sizeof(float)) {
    float value = 0.0f;
    std::memcpy(&value, tensor->raw_data().data(), sizeof(float));
    return value;
  }
  if (tensor->raw_data().empty() && tensor->float_data_size() == 1) return tensor->float_data(0);
  return std::nullopt;
}

bool all_equal(const onnx::NodeProto& node, const std::string& name, std::int64_t value) {
  const onnx::AttributeProto* attribute = find_attribute(node, name);
  if (attribute == nullptr) return true;
  for (const auto entry : attribute->ints()) {
    if (entry != value) return false;
  }
  return true;
}

// [batch, filters, frames] with named dimensions, as the rest model's input.
void describe_frames(onnx::ValueInfoProto& value, const std::string& name, std::int64_t filters) {
  value.set_name(name);
  auto* tensor = value.mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::FLOAT);
  auto* shape = tensor->mutable_shape();
  shape->add_dim()->set_dim_param("batch");
  shape->add_dim()->set_dim_value(filters);
  shape->add_dim()->set_dim_param("frames");
}

}  // namespace

std::string FirstConvolutionSplit::to_string() const {
  return fmt::format(
      "first convolution: {} filters of {} taps, stride {}; waveform normalisation scale {} bias "
      "{} epsilon {}",
      filters, kernel, stride, norm_scale, norm_bias, norm_epsilon);
}

std::optional<FirstConvolutionSplit> split_first_convolution(const std::string& model_bytes,
                                                             const std::string& model_name) {
  // pyannote's export wraps the convolution in an `If` on the input's shape.
  onnx::ModelProto model =
      parse_model(inline_constant_ifs(model_bytes, model_name).model, model_name);
  onnx::GraphProto& graph = *model.mutable_graph();
  const ConstantTensors constants(graph);

  std::vector<const onnx::ValueInfoProto*> inputs;
  for (const auto& input : graph.input()) {
    if (!constants.contains(input.name())) inputs.push_back(&input);
  }
  if (inputs.size() != 1 ||
      inputs.front()->type().tensor_type().elem_type() != onnx::TensorProto::FLOAT) {
    return std::nullopt;
  }
  const std::string waveform = inputs.front()->name();
  const auto readers = readers_of(graph);
  // The index of the one node reading `tensor`, or -1.
  const auto only_reader = [&](const std::string& tensor) {
    const auto found = readers.find(tensor);
    return found == readers.end() || found->second.size() != 1 ? -1 : found->second.front();
  };
  const auto node_at = [&](int index) { return index < 0 ? nullptr : &graph.node(index); };

  // The waveform, through casts that keep it float32, into the normalisation: the nodes that
  // neither part keeps.
  std::set<int> dropped;
  std::string tensor = waveform;
  int index = only_reader(tensor);
  const onnx::NodeProto* node = node_at(index);
  while (node != nullptr && node->op_type() == "Cast" &&
         int_attribute(*node, "to", -1) == onnx::TensorProto::FLOAT) {
    dropped.insert(index);
    tensor = node->output(0);
    index = only_reader(tensor);
    node = node_at(index);
  }
  if (node == nullptr || node->op_type() != "InstanceNormalization" || node->input_size() != 3 ||
      node->input(0) != tensor) {
    return std::nullopt;
  }
  FirstConvolutionSplit split;
  const auto scale = scalar_float(constants, node->input(1));
  const auto bias = scalar_float(constants, node->input(2));
  if (!scale || !bias) return std::nullopt;
  split.norm_scale = *scale;
  split.norm_bias = *bias;
  if (const auto* epsilon = find_attribute(*node, "epsilon")) split.norm_epsilon = epsilon->f();
  dropped.insert(index);

  const int convolution_index = only_reader(node->output(0));
  const onnx::NodeProto* convolution = node_at(convolution_index);
  if (convolution == nullptr || convolution->op_type() != "Conv" ||
      convolution->input_size() != 2 || convolution->input(0) != node->output(0)) {
    return std::nullopt;
  }
  const onnx::AttributeProto* strides = find_attribute(*convolution, "strides");
  const onnx::AttributeProto* kernel_shape = find_attribute(*convolution, "kernel_shape");
  const onnx::AttributeProto* auto_pad = find_attribute(*convolution, "auto_pad");
  if (strides == nullptr || strides->ints_size() != 1 || kernel_shape == nullptr ||
      kernel_shape->ints_size() != 1 || !all_equal(*convolution, "pads", 0) ||
      !all_equal(*convolution, "dilations", 1) || int_attribute(*convolution, "group", 1) != 1 ||
      (auto_pad != nullptr && auto_pad->s() != "NOTSET")) {
    return std::nullopt;
  }
  split.stride = strides->ints(0);
  split.kernel = kernel_shape->ints(0);
  const onnx::TensorProto* filters = constants.find(convolution->input(1));
  if (filters != nullptr) {
    if (filters->data_type() != onnx::TensorProto::FLOAT || filters->dims_size() != 3 ||
        filters->dims(1) != 1 || filters->dims(2) != split.kernel) {
      return std::nullopt;
    }
    split.filters = filters->dims(0);
  }
  if (split.stride < 1 || split.kernel < 1) return std::nullopt;
  const std::string frames = convolution->output(0);

  // The convolution alone: the filters' computation (if any), the Conv on raw samples.
  onnx::ModelProto convolution_model = model;
  {
    onnx::GraphProto& conv_graph = *convolution_model.mutable_graph();
    google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
    for (int i = 0; i < conv_graph.node_size(); ++i) {
      if (dropped.count(i) > 0) continue;
      onnx::NodeProto& copy = *kept.Add() = conv_graph.node(i);
      // Renamed so that callers need not know the export's tensor names.
      if (i == convolution_index) {
        copy.set_input(0, "samples");
        copy.set_output(0, "frames");
      }
    }
    conv_graph.mutable_node()->Swap(&kept);
    conv_graph.clear_input();
    onnx::ValueInfoProto* samples = conv_graph.add_input();
    samples->set_name("samples");
    auto* samples_type = samples->mutable_type()->mutable_tensor_type();
    samples_type->set_elem_type(onnx::TensorProto::FLOAT);
    samples_type->mutable_shape()->add_dim()->set_dim_value(1);
    samples_type->mutable_shape()->add_dim()->set_dim_value(1);
    samples_type->mutable_shape()->add_dim()->set_dim_param("samples");
    conv_graph.clear_output();
    conv_graph.clear_value_info();
    describe_frames(*conv_graph.add_output(), "frames", split.filters);
    if (split.filters == 0) {
      conv_graph.mutable_output(0)
          ->mutable_type()
          ->mutable_tensor_type()
          ->mutable_shape()
          ->mutable_dim(1)
          ->set_dim_param("filters");
    }
    prune_unused(conv_graph);
    split.convolution_model = serialize_model(convolution_model, model_name);
  }

  // The rest: the convolution's output becomes the input.
  {
    google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
    for (int i = 0; i < graph.node_size(); ++i) {
      if (dropped.count(i) == 0 && i != convolution_index) *kept.Add() = graph.node(i);
    }
    graph.mutable_node()->Swap(&kept);
    google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> kept_inputs;
    for (const auto& input : graph.input()) {
      if (input.name() != waveform) *kept_inputs.Add() = input;
    }
    graph.mutable_input()->Swap(&kept_inputs);
    describe_frames(*graph.add_input(), frames, split.filters);
    if (split.filters == 0) {
      graph.mutable_input(graph.input_size() - 1)
          ->mutable_type()
          ->mutable_tensor_type()
          ->mutable_shape()
          ->mutable_dim(1)
          ->set_dim_param("filters");
    }
    prune_unused(graph);
    // Older exports list initializers as inputs too: one no longer read must go, or ONNX
    // Runtime would ask for it.
    std::set<std::string> reads;
    for (const auto& kept_node : graph.node()) collect_reads(kept_node, reads);
    for (const auto& output : graph.output()) reads.insert(output.name());
    google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> read_inputs;
    for (const auto& input : graph.input()) {
      if (reads.count(input.name()) > 0) *read_inputs.Add() = input;
    }
    graph.mutable_input()->Swap(&read_inputs);
    split.rest_input = frames;
    split.rest_model = serialize_model(model, model_name);
  }
  return split;
}

}  // namespace parley::graph
