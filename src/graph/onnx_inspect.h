#pragma once
// What ONNX Runtime sees in a model file: input/output signature and metadata. A private helper
// of the models module (verification, speed-twin detection); inference goes through runtime/.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "runtime/shape_plan.h"

namespace parley::graph {

struct OnnxTensorInfo {
  std::string name;
  std::string element_type;          // "float32", "float16", "int64", ...
  std::vector<std::int64_t> shape;   // -1 for a dynamic axis
  std::vector<std::string> symbols;  // the dynamic axes' names where the model gives them

  std::string shape_string() const;  // "[1,1,samples]", "?" for an unnamed dynamic axis
};

struct OnnxModelInfo {
  std::vector<OnnxTensorInfo> inputs;
  std::vector<OnnxTensorInfo> outputs;
  std::string description;                      // the model's doc_string
  std::map<std::string, std::string> metadata;  // metadata_props
};

// Opens the model with ONNX Runtime on the CPU (no graph optimisation: only the signature is
// read). Throws parley::Error naming the file when ONNX Runtime cannot load it.
OnnxModelInfo inspect_onnx_model(const std::filesystem::path& path);

// The model's metadata_props, read from the file without parsing its graph or weights (a
// session would load them all): how a speed twin is recognised at every start.
std::map<std::string, std::string> model_metadata(const std::filesystem::path& path);

// The graph inputs of a serialized model as it declares them (-1 and the symbol for a dynamic
// axis), read from the protobuf without a session; initializers listed as inputs are left out.
// What the compiled-graph cache's dimension overrides are computed from.
std::vector<runtime::DeclaredInput> declared_inputs(const std::string& model_bytes,
                                                    const std::string& model_name);

}  // namespace parley::graph
