#include "graph/recurrent_state_rewrite.h"

#include <onnx/onnx_pb.h>

#include <map>
#include <set>
#include <vector>

#include "core/error.h"
#include "graph/graph_edit.h"

namespace parley::graph {
namespace {

bool tensor_is_all_zero(const onnx::TensorProto& tensor) {
  // Zero bits are 0 (or +0.0) in every numeric type ONNX has.
  for (const char byte : tensor.raw_data()) {
    if (byte != 0) return false;
  }
  for (const float value : tensor.float_data()) {
    if (value != 0.0f) return false;
  }
  for (const auto value : tensor.int32_data()) {  // also float16 / bool payloads
    if (value != 0) return false;
  }
  for (const auto value : tensor.int64_data()) {
    if (value != 0) return false;
  }
  for (const double value : tensor.double_data()) {
    if (value != 0.0) return false;
  }
  return true;
}

class ZeroStateFinder {
 public:
  explicit ZeroStateFinder(const onnx::GraphProto& graph) : graph_(graph) {
    for (int i = 0; i < graph.node_size(); ++i) {
      for (const auto& output : graph.node(i).output()) producer_[output] = i;
    }
  }

  bool is_zero(const std::string& tensor) const {
    std::string current = tensor;
    for (int hop = 0; hop < 8; ++hop) {
      const auto found = producer_.find(current);
      if (found == producer_.end()) return false;
      const onnx::NodeProto& node = graph_.node(found->second);
      if (node.op_type() == "ConstantOfShape") {
        for (const auto& attribute : node.attribute()) {
          if (attribute.name() == "value") return tensor_is_all_zero(attribute.t());
        }
        return true;  // the default value is a float 0
      }
      static const std::set<std::string> kValuePreserving = {"Slice",   "Reshape",  "Unsqueeze",
                                                             "Squeeze", "Identity", "Expand"};
      if (kValuePreserving.count(node.op_type()) == 0 || node.input_size() == 0) return false;
      current = node.input(0);
    }
    return false;
  }

 private:
  const onnx::GraphProto& graph_;
  std::map<std::string, int> producer_;
};

}  // namespace

RecurrentStateRewrite drop_zero_recurrent_states(const std::string& model_bytes,
                                                 const std::string& model_name) {
  onnx::ModelProto model = parse_model(model_bytes, model_name);
  onnx::GraphProto* graph = model.mutable_graph();
  RecurrentStateRewrite rewrite;
  {
    const ZeroStateFinder finder(*graph);
    // Input positions of the initial states: LSTM X,W,R,B,sequence_lens,initial_h,initial_c,P;
    // GRU and RNN X,W,R,B,sequence_lens,initial_h.
    const std::map<std::string, std::vector<int>> state_inputs = {
        {"LSTM", {5, 6}}, {"GRU", {5}}, {"RNN", {5}}};
    for (auto& node : *graph->mutable_node()) {
      const auto positions = state_inputs.find(node.op_type());
      if (positions == state_inputs.end()) continue;
      for (const int position : positions->second) {
        if (position < node.input_size() && !node.input(position).empty() &&
            finder.is_zero(node.input(position))) {
          node.set_input(position, "");  // an omitted optional input
          ++rewrite.states_removed;
        }
      }
      while (node.input_size() > 0 && node.input(node.input_size() - 1).empty()) {
        node.mutable_input()->RemoveLast();
      }
    }
  }
  if (rewrite.states_removed == 0) {
    rewrite.model = model_bytes;
    return rewrite;
  }

  rewrite.nodes_removed = prune_unused(*graph).nodes;
  rewrite.model = serialize_model(model, model_name);
  return rewrite;
}

}  // namespace parley::graph
