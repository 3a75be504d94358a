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

namespace parley::graph {

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

// The version of the default ("ai.onnx") operator set `model` imports; 1 when it names none.
std::int64_t default_domain_opset(const onnx::ModelProto& model);

// Appends nodes, constants and inputs to a graph under fresh names "<prefix>/<stem>" (a suffix
// added where the graph already uses one): the derived graphs built in front of or behind a
// source model (graph/pooled_trunk_graph.h, graph/fbank_graph.h).
class GraphAppender {
 public:
  GraphAppender(onnx::GraphProto& graph, std::int64_t opset, std::string prefix);

  std::string fresh(const std::string& stem);
  // A node of `op` reading `inputs`, with one output named fresh(stem); returns that name.
  std::string node(const std::string& op, const std::vector<std::string>& inputs,
                   const std::string& stem);
  // Attributes of the node added last.
  void int_attribute(const std::string& name, std::int64_t value);
  void ints_attribute(const std::string& name, const std::vector<std::int64_t>& values);
  // Constant tensors (initializers).
  std::string floats(const std::string& stem, const std::vector<std::int64_t>& dims,
                     const std::vector<float>& values);
  std::string doubles(const std::string& stem, const std::vector<std::int64_t>& dims,
                      const std::vector<double>& values);
  std::string ints(const std::string& stem, const std::vector<std::int64_t>& values);
  // An INT64 scalar (rank 0), e.g. a Gather index that leaves a scalar.
  std::string int_scalar(const std::string& stem, std::int64_t value);
  // ReduceMean over the last axis, keeping it: `axes` is an attribute before opset 18.
  std::string mean_over_last_axis(const std::string& input, const std::string& stem);
  // Cast to an onnx::TensorProto data type.
  std::string cast(const std::string& input, int to, const std::string& stem);
  // A float graph input or output; a dimension "1" is fixed, any other is a named dynamic axis.
  void float_input(const std::string& name, const std::vector<std::string>& dims);
  void float_output(const std::string& name, const std::vector<std::string>& dims);
  // The node added last writes `name` (a name the caller chose, e.g. a graph output) instead of
  // its fresh one; returns it.
  std::string name_output(const std::string& name);
  // Marks `name` as taken (an input or output added by the caller).
  void take(const std::string& name) { taken_.insert(name); }
  onnx::NodeProto& last() { return *last_; }

 private:
  onnx::GraphProto& graph_;
  std::int64_t opset_;
  std::string prefix_;
  std::set<std::string> taken_;
  onnx::NodeProto* last_ = nullptr;
};

}  // namespace parley::graph
