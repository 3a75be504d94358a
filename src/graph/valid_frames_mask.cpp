#include "graph/valid_frames_mask.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "core/error.h"
#include "graph/receptive_field.h"

namespace parley::graph {
namespace {

// What is known of a tensor computed from the input: where batch and time are, its element
// type (a float16 trunk casts after its input) and the name of its valid length.
struct Tracked {
  std::int64_t batch_axis = 0;
  std::int64_t time_axis = 0;
  std::int64_t rank = 0;
  int element_type = onnx::TensorProto::FLOAT;
  std::string length;  // [B] float
};

std::vector<std::int64_t> ints_of(const onnx::NodeProto& node, const std::string& name) {
  const onnx::AttributeProto* attribute = find_attribute(node, name);
  if (attribute == nullptr) return {};
  return {attribute->ints().begin(), attribute->ints().end()};
}

std::int64_t normalised(std::int64_t axis, std::int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

// Where `axis` of a rank-`rank` tensor goes through Unsqueeze (`inserted` axes of the output)
// or Squeeze (`removed` axes of the input); nullopt when Squeeze removes it.
std::optional<std::int64_t> axis_after(std::int64_t axis, const std::vector<std::int64_t>& changed,
                                       bool unsqueeze) {
  if (unsqueeze) {
    for (const std::int64_t inserted : changed) {  // ascending, output positions
      if (inserted <= axis) ++axis;
    }
    return axis;
  }
  if (std::find(changed.begin(), changed.end(), axis) != changed.end()) return std::nullopt;
  return axis - std::count_if(changed.begin(), changed.end(),
                              [&](std::int64_t removed) { return removed < axis; });
}

class Walk {
 public:
  Walk(GraphAppender& g, std::int64_t opset) : g_(g), opset_(opset) {}

  // The next tracked state of `node`'s output 0, rewriting the node's input where it is a
  // window; nullopt when the walk cannot follow it.
  std::optional<Tracked> step(onnx::NodeProto& node, const Tracked& first,
                              const std::vector<const Tracked*>& sources,
                              const ConstantTensors& constants, ValidFramesMask& result) {
    const std::string& op = node.op_type();
    Tracked next = first;
    if (is_elementwise_op(op)) {
      // Broadcasting aligns axes from the last one.
      for (const Tracked* source : sources) {
        if (source->rank - source->time_axis != first.rank - first.time_axis ||
            source->rank - source->batch_axis != first.rank - first.batch_axis) {
          return std::nullopt;
        }
        next.rank = std::max(next.rank, source->rank);
      }
      next.time_axis = next.rank - (first.rank - first.time_axis);
      next.batch_axis = next.rank - (first.rank - first.batch_axis);
      if (op == "Cast") {
        next.element_type = static_cast<int>(int_attribute(node, "to", first.element_type));
      }
      return next;
    }
    if (op == "Transpose") {
      const auto perm = ints_of(node, "perm");
      const auto time = std::find(perm.begin(), perm.end(), first.time_axis);
      const auto batch = std::find(perm.begin(), perm.end(), first.batch_axis);
      if (time == perm.end() || batch == perm.end()) return std::nullopt;
      next.time_axis = time - perm.begin();
      next.batch_axis = batch - perm.begin();
      return next;
    }
    if (op == "Unsqueeze" || op == "Squeeze") {
      std::optional<std::vector<std::int64_t>> axes;
      if (find_attribute(node, "axes") != nullptr) {
        axes = ints_of(node, "axes");
      } else if (node.input_size() >= 2) {
        axes = constants.ints(node.input(1));
      }
      if (!axes || axes->empty()) return std::nullopt;
      const bool inserting = op == "Unsqueeze";
      next.rank = first.rank + (inserting ? 1 : -1) * static_cast<std::int64_t>(axes->size());
      for (auto& axis : *axes) axis = normalised(axis, inserting ? next.rank : first.rank);
      std::sort(axes->begin(), axes->end());
      const auto time = axis_after(first.time_axis, *axes, inserting);
      const auto batch = axis_after(first.batch_axis, *axes, inserting);
      if (!time || !batch) return std::nullopt;
      next.time_axis = *time;
      next.batch_axis = *batch;
      return next;
    }
    if (op == "Conv" || op == "MaxPool" || op == "AveragePool" || op == "LpPool") {
      return window(node, first, constants, result);
    }
    return std::nullopt;
  }

  std::string last_window_length;

 private:
  std::optional<Tracked> window(onnx::NodeProto& node, const Tracked& first,
                                const ConstantTensors& constants, ValidFramesMask& result) {
    const std::int64_t spatial = first.time_axis - 2;
    if (first.batch_axis != 0 || spatial < 0) return std::nullopt;
    const auto s = static_cast<std::size_t>(spatial);
    std::vector<std::int64_t> kernel = ints_of(node, "kernel_shape");
    if (kernel.empty() && node.op_type() == "Conv" && node.input_size() >= 2) {
      const onnx::TensorProto* weight = constants.find(node.input(1));
      if (weight != nullptr && weight->dims_size() > 2) {
        kernel.assign(weight->dims().begin() + 2, weight->dims().end());
      }
    }
    const auto dims = static_cast<std::size_t>(first.rank - 2);
    if (kernel.size() != dims) return std::nullopt;
    const onnx::AttributeProto* auto_pad = find_attribute(node, "auto_pad");
    if (auto_pad != nullptr && auto_pad->s() != "NOTSET" && auto_pad->s() != "VALID") {
      return std::nullopt;
    }
    const auto at = [](const std::vector<std::int64_t>& values, std::size_t index,
                       std::int64_t fallback) {
      return index < values.size() ? values[index] : fallback;
    };
    const std::vector<std::int64_t> pads = ints_of(node, "pads");
    const std::int64_t stride = at(ints_of(node, "strides"), s, 1);
    const std::int64_t dilation = at(ints_of(node, "dilations"), s, 1);
    const std::int64_t padding = at(pads, s, 0) + at(pads, s + dims, 0);
    const bool ceil_mode = int_attribute(node, "ceil_mode", 0) != 0;
    // The output length of the window over L frames: (L + offset) / stride + 1, rounded down
    // (up with ceil_mode).
    const std::int64_t offset = padding - dilation * (kernel[s] - 1) - 1;
    // MaxPool's padding is never the maximum; the others pad with zeros.
    const float fill = node.op_type() == "MaxPool" ? -std::numeric_limits<float>::infinity() : 0.0f;
    const std::string masked =
        fill == 0.0f
            ? g_.node("Mul", {node.input(0), factor_for(first, node.input(0))}, "masked_input")
            : g_.node("Where",
                      {mask_for(first, node.input(0)), node.input(0),
                       fill_of(fill, first.element_type)},
                      "masked_input");
    node.set_input(0, masked);
    ++result.masked_operators;
    Tracked next = first;
    next.length = output_length(first.length, offset, stride, ceil_mode);
    last_window_length = next.length;
    return next;
  }

  std::string output_length(const std::string& length, std::int64_t offset, std::int64_t stride,
                            bool ceil_mode) {
    if (stride == 1 && offset == -1) return length;  // "same" padding
    const auto key = std::make_tuple(length, offset, stride, ceil_mode);
    if (const auto found = lengths_.find(key); found != lengths_.end()) return found->second;
    std::string value = length;
    if (stride == 1) {
      value =
          g_.node("Add", {value, g_.floats("length_offset", {}, {static_cast<float>(offset + 1)})},
                  "length");
    } else {
      if (offset != 0) {
        value =
            g_.node("Add", {value, g_.floats("length_offset", {}, {static_cast<float>(offset)})},
                    "length_padded");
      }
      value = g_.node("Div", {value, g_.floats("length_stride", {}, {static_cast<float>(stride)})},
                      "length_strided");
      value = g_.node(ceil_mode ? "Ceil" : "Floor", {value}, "length_rounded");
      value = g_.node("Add", {value, g_.floats("length_one", {}, {1.0f})}, "length");
    }
    lengths_.emplace(key, value);
    return value;
  }

  // The valid mask of `tracked`, shaped to broadcast against it (B and T at their axes, 1
  // elsewhere); `tensor` gives the time axis's size.
  std::string mask_for(const Tracked& tracked, const std::string& tensor) {
    const auto key =
        std::make_tuple(tracked.length, tracked.rank, tracked.batch_axis, tracked.time_axis);
    if (const auto found = masks_.find(key); found != masks_.end()) return found->second;
    std::string mask = valid_time_mask(g_, opset_, tensor, tracked.time_axis, tracked.length,
                                       "valid");  // [B, T]
    if (tracked.batch_axis > tracked.time_axis) {
      mask = g_.node("Transpose", {mask}, "valid_by_time");
      g_.ints_attribute("perm", {1, 0});
    }
    std::vector<std::int64_t> others;
    for (std::int64_t axis = 0; axis < tracked.rank; ++axis) {
      if (axis != tracked.batch_axis && axis != tracked.time_axis) others.push_back(axis);
    }
    if (!others.empty()) mask = unsqueeze(g_, opset_, mask, others, "valid_broadcast");
    masks_.emplace(key, mask);
    return mask;
  }

  std::string factor_for(const Tracked& tracked, const std::string& tensor) {
    const std::string mask = mask_for(tracked, tensor);
    const auto key = std::make_pair(mask, tracked.element_type);
    if (const auto found = factors_.find(key); found != factors_.end()) return found->second;
    std::string factor = g_.cast(mask, tracked.element_type, "valid_factor");
    factors_.emplace(key, factor);
    return factor;
  }

  std::string fill_of(float value, int element_type) {
    const auto key = std::make_pair(value, element_type);
    if (const auto found = fills_.find(key); found != fills_.end()) return found->second;
    std::string fill = g_.floats("padding", {}, {value});
    if (element_type != onnx::TensorProto::FLOAT) fill = g_.cast(fill, element_type, "padding");
    fills_.emplace(key, fill);
    return fill;
  }

  GraphAppender& g_;
  std::int64_t opset_;
  std::map<std::tuple<std::string, std::int64_t, std::int64_t, bool>, std::string> lengths_;
  std::map<std::tuple<std::string, std::int64_t, std::int64_t, std::int64_t>, std::string> masks_;
  std::map<std::pair<float, int>, std::string> fills_;
  std::map<std::pair<std::string, int>, std::string> factors_;
};

}  // namespace

std::string unsqueeze(GraphAppender& g, std::int64_t opset, const std::string& input,
                      const std::vector<std::int64_t>& axes, const std::string& stem) {
  if (opset >= 13) return g.node("Unsqueeze", {input, g.ints(stem + "_axes", axes)}, stem);
  std::string output = g.node("Unsqueeze", {input}, stem);
  g.ints_attribute("axes", axes);
  return output;
}

std::string valid_time_mask(GraphAppender& g, std::int64_t opset, const std::string& tensor,
                            std::int64_t time_axis, const std::string& length,
                            const std::string& stem) {
  const std::string shape = g.node("Shape", {tensor}, stem + "_shape");
  const std::string size =
      g.node("Gather", {shape, g.int_scalar(stem + "_time_axis", time_axis)}, stem + "_frames");
  const std::string positions =
      g.node("Range",
             {g.floats(stem + "_first", {}, {0.0f}),
              g.cast(size, onnx::TensorProto::FLOAT, stem + "_frames_float"),
              g.floats(stem + "_step", {}, {1.0f})},
             stem + "_positions");
  return g.node("Less",
                {unsqueeze(g, opset, positions, {0}, stem + "_row"),
                 unsqueeze(g, opset, length, {1}, stem + "_column")},
                stem + "_mask");
}

ValidFramesMask mask_past_valid_frames(onnx::GraphProto& graph, GraphAppender& g,
                                       std::int64_t opset, const std::string& input,
                                       std::int64_t input_time_axis,
                                       const std::string& valid_frames, const std::string& output) {
  // The constants point into the nodes, which the swap below keeps alive (and in place).
  const ConstantTensors constants(graph);
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  nodes.Swap(graph.mutable_node());
  std::map<std::string, Tracked> tracked;
  for (const auto& declared : graph.input()) {
    if (declared.name() != input) continue;
    Tracked start;
    start.rank = declared.type().tensor_type().shape().dim_size();
    start.time_axis = normalised(input_time_axis, start.rank);
    start.element_type = declared.type().tensor_type().elem_type();
    start.length = valid_frames;
    tracked[input] = start;
  }
  if (tracked.empty()) fail("mask past valid frames: the graph has no input '{}'", input);
  ValidFramesMask result;
  Walk walk(g, opset);
  for (auto& node : nodes) {
    std::vector<const Tracked*> sources;
    for (const auto& name : node.input()) {
      if (const auto found = tracked.find(name); found != tracked.end()) {
        sources.push_back(&found->second);
      }
    }
    std::optional<Tracked> next;
    // A window follows its data input (input 0) only; shapes carry no frames.
    const bool data_tracked = node.input_size() > 0 && tracked.count(node.input(0)) > 0;
    if (!sources.empty() && node.op_type() != "Shape" && node.op_type() != "Size" &&
        (data_tracked || is_elementwise_op(node.op_type()))) {
      const Tracked& first = data_tracked ? tracked.at(node.input(0)) : *sources.front();
      next = walk.step(node, first, sources, constants, result);
    }
    *graph.add_node() = node;
    if (next && node.output_size() > 0) tracked[node.output(0)] = *next;
  }
  const auto found = tracked.find(output);
  result.output_length = found != tracked.end() ? found->second.length : walk.last_window_length;
  return result;
}

}  // namespace parley::graph
