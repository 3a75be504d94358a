#include "graph/onnx_inspect.h"

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>
#include <onnx/onnx_pb.h>
#include <onnxruntime_cxx_api.h>

#include <set>

#include "core/error.h"
#include "graph/graph_edit.h"
#include "graph/onnx_graph.h"
#include "runtime/onnx_session.h"

namespace parley::graph {

namespace {

// The session wrapper gives names, types and shapes; the dynamic axes' names come from ORT.
OnnxTensorInfo tensor_info(const runtime::TensorInfo& described, const Ort::TypeInfo& type_info) {
  OnnxTensorInfo tensor;
  tensor.name = described.name;
  tensor.element_type = runtime::element_type_name(described.element_type);
  tensor.shape = described.shape;
  if (type_info.GetONNXType() == ONNX_TYPE_TENSOR) {
    for (const char* symbol : type_info.GetTensorTypeAndShapeInfo().GetSymbolicDimensions()) {
      tensor.symbols.emplace_back(symbol == nullptr ? "" : symbol);
    }
  }
  return tensor;
}

}  // namespace

std::string OnnxTensorInfo::shape_string() const {
  std::vector<std::string> parts;
  for (std::size_t axis = 0; axis < shape.size(); ++axis) {
    if (shape[axis] >= 0) {
      parts.push_back(std::to_string(shape[axis]));
    } else if (axis < symbols.size() && !symbols[axis].empty()) {
      parts.push_back(symbols[axis]);
    } else {
      parts.emplace_back("?");
    }
  }
  return fmt::format("[{}]", fmt::join(parts, ","));
}

OnnxModelInfo inspect_onnx_model(const std::filesystem::path& path) {
  runtime::SessionConfig config;
  config.intra_op_threads = 1;
  // Only the signature is read: optimising the graph would cost time and, for the fp16
  // segmentation model, risk ORT's crash at the higher levels.
  config.optimization = runtime::GraphOptimization::kDisabled;
  runtime::OnnxSession session(path, config);
  try {
    Ort::Session& ort_session = session.ort_session();
    OnnxModelInfo info;
    for (std::size_t index = 0; index < session.inputs().size(); ++index) {
      info.inputs.push_back(
          tensor_info(session.inputs()[index], ort_session.GetInputTypeInfo(index)));
    }
    for (std::size_t index = 0; index < session.outputs().size(); ++index) {
      info.outputs.push_back(
          tensor_info(session.outputs()[index], ort_session.GetOutputTypeInfo(index)));
    }
    Ort::AllocatorWithDefaultOptions allocator;
    info.description = ort_session.GetModelMetadata().GetDescriptionAllocated(allocator).get();
    info.metadata = session.metadata();
    return info;
  } catch (const Ort::Exception& error) {
    fail(
        "{}: ONNX Runtime cannot read the model's signature ({}); check the file with "
        "`parley models verify`",
        path.string(), error.what());
  }
}

std::map<std::string, std::string> model_metadata(const std::filesystem::path& path) {
  using google::protobuf::internal::WireFormatLite;
  // ModelProto's field numbers (onnx.proto): metadata_props is 14.
  constexpr int kMetadataProps = 14;
  const std::string bytes = read_model_bytes(path);
  google::protobuf::io::CodedInputStream input(reinterpret_cast<const std::uint8_t*>(bytes.data()),
                                               static_cast<int>(bytes.size()));
  std::map<std::string, std::string> metadata;
  while (const std::uint32_t tag = input.ReadTag()) {
    const bool is_entry =
        WireFormatLite::GetTagFieldNumber(tag) == kMetadataProps &&
        WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
    if (!is_entry) {
      if (!WireFormatLite::SkipField(&input, tag)) break;
      continue;
    }
    std::uint32_t length = 0;
    onnx::StringStringEntryProto entry;
    if (!input.ReadVarint32(&length)) break;
    const auto limit = input.PushLimit(static_cast<int>(length));
    const bool parsed = entry.ParseFromCodedStream(&input) && input.ConsumedEntireMessage();
    input.PopLimit(limit);
    if (!parsed) break;
    metadata[entry.key()] = entry.value();
  }
  if (!input.ConsumedEntireMessage() || input.CurrentPosition() != static_cast<int>(bytes.size())) {
    fail(
        "{}: not a valid ONNX model (protobuf parse failed); is the file complete? (`parley "
        "models verify` checks it)",
        path.string());
  }
  return metadata;
}

std::vector<runtime::DeclaredInput> declared_inputs(const std::string& model_bytes,
                                                    const std::string& model_name) {
  const onnx::ModelProto model = parse_model(model_bytes, model_name);
  std::set<std::string> initializers;
  for (const auto& initializer : model.graph().initializer())
    initializers.insert(initializer.name());
  std::vector<runtime::DeclaredInput> inputs;
  for (const auto& input : model.graph().input()) {
    if (initializers.count(input.name()) > 0) continue;
    runtime::DeclaredInput declared;
    declared.name = input.name();
    for (const auto& dim : input.type().tensor_type().shape().dim()) {
      const bool fixed = dim.has_dim_value();
      declared.dims.push_back(fixed ? dim.dim_value() : -1);
      declared.symbols.push_back(fixed ? std::string() : dim.dim_param());
    }
    inputs.push_back(std::move(declared));
  }
  return inputs;
}

}  // namespace parley::graph
