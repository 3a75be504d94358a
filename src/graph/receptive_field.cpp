#include "graph/receptive_field.h"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "core/error.h"
#include "graph/graph_edit.h"

namespace parley::graph {
namespace {

using Kind = TimeReceptiveField::Kind;

// What is known of a tensor that depends on the input: which axis is time, and the field.
struct Tracked {
  std::int64_t axis = 0;
  std::int64_t rank = 0;
  TimeReceptiveField field;
};

// Operators applied element by element (with broadcasting of constants such as biases, slopes,
// batch-norm statistics): the time axis and the field pass through; branches take the widest.
const std::set<std::string> kElementwise = {
    "Add",  "Sub",  "Mul",         "Div",       "Max",      "Min",
    "Sum",  "Relu", "LeakyRelu",   "PRelu",     "Sigmoid",  "Tanh",
    "Elu",  "Selu", "HardSigmoid", "HardSwish", "Softplus", "Softsign",
    "Clip", "Abs",  "Neg",         "Exp",       "Log",      "Sqrt",
    "Pow",  "Erf",  "Cast",        "Identity",  "Dropout",  "BatchNormalization",
    "Mish", "Gelu", "Reciprocal",  "Floor",     "Ceil",     "Round",
    "Sign", "Not",  "Where",       "Equal",     "Greater",  "Less"};

// Operators that mix every frame of the time axis into each output.
const std::set<std::string> kGlobal = {"GlobalAveragePool",
                                       "GlobalMaxPool",
                                       "GlobalLpPool",
                                       "InstanceNormalization",
                                       "LSTM",
                                       "GRU",
                                       "RNN",
                                       "Attention",
                                       "MultiHeadAttention",
                                       "LayerNormalization"};

std::vector<std::int64_t> ints_attribute(const onnx::NodeProto& node, const std::string& name) {
  const onnx::AttributeProto* attribute = find_attribute(node, name);
  if (attribute == nullptr) return {};
  return {attribute->ints().begin(), attribute->ints().end()};
}

// Axes of Unsqueeze/Squeeze: an attribute before opset 13, the second input since.
std::optional<std::vector<std::int64_t>> axes_of(const onnx::NodeProto& node,
                                                 const ConstantTensors& constants) {
  if (find_attribute(node, "axes") != nullptr) return ints_attribute(node, "axes");
  if (node.input_size() >= 2) return constants.ints(node.input(1));
  return std::nullopt;
}

std::int64_t normalised(std::int64_t axis, std::int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

TimeReceptiveField stopped(Kind kind, const onnx::NodeProto& node, const std::string& why) {
  TimeReceptiveField field;
  field.kind = kind;
  field.reason = fmt::format("{} '{}' {}", node.op_type(), node.name(), why);
  return field;
}

}  // namespace

bool is_elementwise_op(const std::string& op) { return kElementwise.count(op) > 0; }

std::string TimeReceptiveField::to_string() const {
  switch (kind) {
    case Kind::kLocal:
      return fmt::format("stride {}, {} frames before and {} after", stride, before, after);
    case Kind::kGlobal:
      return "global (" + reason + ")";
    case Kind::kUnknown:
      break;
  }
  return "unknown (" + reason + ")";
}

TimeReceptiveField time_receptive_field(const std::string& model_bytes,
                                        const std::string& model_name, const std::string& input,
                                        std::int64_t input_time_axis, const std::string& output) {
  const onnx::ModelProto model = parse_model(model_bytes, model_name);
  const onnx::GraphProto& graph = model.graph();
  const ConstantTensors constants(graph);
  std::map<std::string, Tracked> tracked;
  for (const auto& declared : graph.input()) {
    if (declared.name() != input) continue;
    Tracked start;
    start.rank = declared.type().tensor_type().shape().dim_size();
    start.axis = normalised(input_time_axis, start.rank);
    start.field.kind = Kind::kLocal;
    tracked[input] = start;
  }
  if (tracked.empty()) fail("{}: no input '{}'", model_name, input);

  for (const auto& node : graph.node()) {
    std::vector<const Tracked*> sources;
    for (const auto& name : node.input()) {
      if (const auto found = tracked.find(name); found != tracked.end())
        sources.push_back(&found->second);
    }
    if (sources.empty()) continue;  // does not depend on the input
    const Tracked& first = *sources.front();
    Tracked next = first;
    const std::string& op = node.op_type();
    // Shapes and sizes carry no frames (exports compute reshape targets from them).
    if (op == "Shape" || op == "Size") continue;
    if (kGlobal.count(op) > 0 || op.rfind("Reduce", 0) == 0 || op == "Softmax" || op == "MatMul" ||
        op == "Gemm") {
      bool over_time = kGlobal.count(op) > 0 || op == "Gemm";
      if (op.rfind("Reduce", 0) == 0) {
        auto axes = axes_of(node, constants);
        over_time = !axes || axes->empty() ||
                    std::any_of(axes->begin(), axes->end(), [&](std::int64_t axis) {
                      return normalised(axis, first.rank) == first.axis;
                    });
      } else if (op == "Softmax") {
        const onnx::AttributeProto* axis = find_attribute(node, "axis");
        over_time = normalised(axis != nullptr ? axis->i() : -1, first.rank) == first.axis;
      } else if (op == "MatMul") {
        over_time = first.axis >= first.rank - 2;  // time on a contracted or mixed axis
      }
      if (!over_time) return stopped(Kind::kUnknown, node, "is not followed along time");
      return stopped(Kind::kGlobal, node, "mixes the whole time axis");
    }
    if (is_elementwise_op(op)) {
      // Broadcasting aligns axes from the last one: time must sit as far from the end in every
      // input that carries it.
      const std::int64_t from_end = first.rank - first.axis;
      for (const Tracked* source : sources) {
        if (source->field.stride != first.field.stride) {
          return stopped(Kind::kUnknown, node, "joins branches of different time strides");
        }
        if (source->rank - source->axis != from_end) {
          return stopped(Kind::kUnknown, node, "joins branches with time on different axes");
        }
        next.field.before = std::max(next.field.before, source->field.before);
        next.field.after = std::max(next.field.after, source->field.after);
        next.rank = std::max(next.rank, source->rank);
      }
      next.axis = next.rank - from_end;
    } else if (op == "Transpose") {
      const auto perm = ints_attribute(node, "perm");
      const auto at = std::find(perm.begin(), perm.end(), first.axis);
      if (at == perm.end()) return stopped(Kind::kUnknown, node, "has no explicit permutation");
      next.axis = at - perm.begin();
    } else if (op == "Unsqueeze" || op == "Squeeze") {
      auto axes = axes_of(node, constants);
      if (!axes && op == "Squeeze" && node.input_size() < 2) {
        return stopped(Kind::kUnknown, node, "removes every axis of size 1 (no axes given)");
      }
      if (!axes) return stopped(Kind::kUnknown, node, "has axes that are not constant");
      const bool unsqueeze = op == "Unsqueeze";
      const std::int64_t rank = unsqueeze ? first.rank + static_cast<std::int64_t>(axes->size())
                                          : first.rank - static_cast<std::int64_t>(axes->size());
      std::vector<std::int64_t> sorted;
      for (const auto axis : *axes)
        sorted.push_back(normalised(axis, unsqueeze ? rank : first.rank));
      std::sort(sorted.begin(), sorted.end());
      std::int64_t axis = first.axis;
      for (const auto changed : sorted) {
        if (unsqueeze && changed <= axis) ++axis;
        if (!unsqueeze && changed == first.axis) {
          return stopped(Kind::kUnknown, node, "removes the time axis");
        }
      }
      if (!unsqueeze) {
        axis = first.axis - std::count_if(sorted.begin(), sorted.end(), [&](std::int64_t changed) {
                 return changed < first.axis;
               });
      }
      next.axis = axis;
      next.rank = rank;
    } else if (op == "Conv" || op == "MaxPool" || op == "AveragePool" || op == "LpPool") {
      const std::int64_t spatial = first.axis - 2;
      if (spatial < 0) return stopped(Kind::kUnknown, node, "runs along batch or channels");
      std::vector<std::int64_t> kernel = ints_attribute(node, "kernel_shape");
      if (kernel.empty() && op == "Conv" && node.input_size() >= 2) {
        const onnx::TensorProto* weight = constants.find(node.input(1));
        if (weight != nullptr && weight->dims_size() > 2) {
          kernel.assign(weight->dims().begin() + 2, weight->dims().end());
        }
      }
      const std::size_t dims = static_cast<std::size_t>(first.rank - 2);
      if (kernel.size() != dims) return stopped(Kind::kUnknown, node, "has no readable kernel");
      auto at = [&](const std::vector<std::int64_t>& values, std::size_t index,
                    std::int64_t fallback) {
        return index < values.size() ? values[index] : fallback;
      };
      const auto s = static_cast<std::size_t>(spatial);
      const std::int64_t size = kernel[s];
      const std::int64_t stride = at(ints_attribute(node, "strides"), s, 1);
      const std::int64_t dilation = at(ints_attribute(node, "dilations"), s, 1);
      const std::vector<std::int64_t> pads = ints_attribute(node, "pads");
      const onnx::AttributeProto* auto_pad = find_attribute(node, "auto_pad");
      if (auto_pad != nullptr && auto_pad->s() != "NOTSET" && auto_pad->s() != "VALID") {
        return stopped(Kind::kUnknown, node, "pads automatically");
      }
      const std::int64_t pad_before = at(pads, s, 0);
      const std::int64_t span = (size - 1) * dilation;
      next.field.before = first.field.before + pad_before * first.field.stride;
      next.field.after = first.field.after + (span - pad_before) * first.field.stride;
      next.field.stride = first.field.stride * stride;
    } else {
      return stopped(Kind::kUnknown, node, "is not one this check follows");
    }
    for (const auto& produced : node.output()) tracked[produced] = next;
  }
  const auto found = tracked.find(output);
  if (found == tracked.end())
    fail("{}: '{}' does not depend on the input '{}'", model_name, output, input);
  return found->second.field;
}

}  // namespace parley::graph
