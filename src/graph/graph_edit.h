#pragma once
// Small ONNX graph edits shared by the model rewrites (recurrent_state_rewrite,
// constant_if_inlining, dynamic_batch): parsing with a clear error, finding every name a graph
// uses, and pruning what no output needs any more.
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace parley::models {

// Parses `model_bytes`; fails naming `model_name` when it is not an ONNX model.
onnx::ModelProto parse_model(const std::string& model_bytes, const std::string& model_name);
std::string serialize_model(const onnx::ModelProto& model, const std::string& model_name);

// Every tensor name a node reads, including those its subgraphs (If, Loop, Scan) take from the
// enclosing scope: pruning must not remove their producers.
void collect_reads(const onnx::NodeProto& node, std::set<std::string>& reads);

// Every value name defined or used anywhere in `graph` and its subgraphs (inputs, outputs,
// initializers, node inputs and outputs, value_info): what a new name must not collide with.
void collect_names(const onnx::GraphProto& graph, std::set<std::string>& names);

// The attribute `name` of `node`, or null.
const onnx::AttributeProto* find_attribute(const onnx::NodeProto& node, const std::string& name);
// An integer attribute, or `fallback` when the node does not set it.
std::int64_t int_attribute(const onnx::NodeProto& node, const std::string& name,
                           std::int64_t fallback);

// The graph's constant tensors by name: initializers and the outputs of Constant nodes (an
// initializer wins a clash). Holds pointers into `graph`, which must outlive it.
class ConstantTensors {
 public:
  explicit ConstantTensors(const onnx::GraphProto& graph);
  const onnx::TensorProto* find(const std::string& name) const;
  bool contains(const std::string& name) const { return find(name) != nullptr; }
  // The values of an INT64 constant (raw or typed data); nullopt when `name` is not one.
  std::optional<std::vector<std::int64_t>> ints(const std::string& name) const;

 private:
  std::map<std::string, const onnx::TensorProto*> tensors_;
};

struct PruneCount {
  int nodes = 0;
  int initializers = 0;
};
// Removes nodes whose outputs nothing needs (the graph's outputs are the roots; nodes are
// topologically sorted), then unused initializers and value_info of removed tensors.
PruneCount prune_unused(onnx::GraphProto& graph);

}  // namespace parley::models
