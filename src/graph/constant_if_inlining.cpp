#include "graph/constant_if_inlining.h"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "core/error.h"
#include "graph/graph_edit.h"

namespace parley::graph {
namespace {

using Element = std::optional<std::int64_t>;
using Dims = std::vector<Element>;  // a tensor's shape; nullopt marks a symbolic dimension

// A small integer (or boolean) tensor whose elements are known where set.
struct KnownValue {
  std::vector<std::int64_t> shape;  // empty: a scalar
  std::vector<Element> elements;
};

constexpr std::size_t kMaxElements = 4096;  // constants larger than this are not shape arithmetic

std::size_t element_count(const std::vector<std::int64_t>& shape) {
  std::size_t count = 1;
  for (const auto dim : shape) count *= static_cast<std::size_t>(dim);
  return count;
}

bool is_integer_type(std::int32_t type) {
  switch (type) {
    case onnx::TensorProto::INT64:
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::INT16:
    case onnx::TensorProto::INT8:
    case onnx::TensorProto::UINT16:
    case onnx::TensorProto::UINT8:
    case onnx::TensorProto::UINT32:
    case onnx::TensorProto::BOOL:
      return true;
    default:
      return false;
  }
}

template <typename T>
std::vector<Element> raw_elements(const std::string& raw, std::size_t count) {
  std::vector<Element> elements;
  if (raw.size() != count * sizeof(T)) return elements;
  for (std::size_t i = 0; i < count; ++i) {
    T value{};
    std::memcpy(&value, raw.data() + i * sizeof(T), sizeof(T));
    elements.emplace_back(static_cast<std::int64_t>(value));
  }
  return elements;
}

std::optional<KnownValue> read_integer_tensor(const onnx::TensorProto& tensor) {
  if (!is_integer_type(tensor.data_type()) || tensor.data_location() == onnx::TensorProto::EXTERNAL)
    return std::nullopt;
  KnownValue value;
  value.shape.assign(tensor.dims().begin(), tensor.dims().end());
  const std::size_t count = element_count(value.shape);
  if (count > kMaxElements) return std::nullopt;
  if (tensor.has_raw_data()) {
    const std::string& raw = tensor.raw_data();
    switch (tensor.data_type()) {
      case onnx::TensorProto::INT64:
        value.elements = raw_elements<std::int64_t>(raw, count);
        break;
      case onnx::TensorProto::INT32:
        value.elements = raw_elements<std::int32_t>(raw, count);
        break;
      case onnx::TensorProto::UINT32:
        value.elements = raw_elements<std::uint32_t>(raw, count);
        break;
      case onnx::TensorProto::INT16:
        value.elements = raw_elements<std::int16_t>(raw, count);
        break;
      case onnx::TensorProto::UINT16:
        value.elements = raw_elements<std::uint16_t>(raw, count);
        break;
      case onnx::TensorProto::INT8:
        value.elements = raw_elements<std::int8_t>(raw, count);
        break;
      default:  // UINT8, BOOL
        value.elements = raw_elements<std::uint8_t>(raw, count);
        break;
    }
  } else if (tensor.data_type() == onnx::TensorProto::INT64) {
    for (const auto element : tensor.int64_data()) value.elements.emplace_back(element);
  } else if (tensor.data_type() == onnx::TensorProto::UINT32) {
    for (const auto element : tensor.uint64_data()) {
      value.elements.emplace_back(static_cast<std::int64_t>(element));
    }
  } else {
    for (const auto element : tensor.int32_data()) value.elements.emplace_back(element);
  }
  if (value.elements.size() != count) return std::nullopt;
  return value;
}

// Ops whose output 0 has the shape of input 0.
bool preserves_shape(const std::string& op) {
  static const std::set<std::string> kOps = {"Cast",
                                             "Identity",
                                             "InstanceNormalization",
                                             "BatchNormalization",
                                             "LayerNormalization",
                                             "Relu",
                                             "LeakyRelu",
                                             "PRelu",
                                             "Elu",
                                             "Selu",
                                             "Sigmoid",
                                             "HardSigmoid",
                                             "Tanh",
                                             "Abs",
                                             "Neg",
                                             "Exp",
                                             "Log",
                                             "Sqrt",
                                             "Reciprocal",
                                             "Floor",
                                             "Ceil",
                                             "Round",
                                             "Sign",
                                             "Erf",
                                             "Softmax",
                                             "LogSoftmax",
                                             "Dropout",
                                             "Clip",
                                             "Not",
                                             "Sin",
                                             "Cos",
                                             "Softplus",
                                             "Gelu"};
  return kOps.count(op) > 0;
}

class ConstantEvaluator {
 public:
  explicit ConstantEvaluator(const onnx::GraphProto& graph) {
    for (const auto& input : graph.input()) {
      if (!input.type().has_tensor_type() || !input.type().tensor_type().has_shape()) continue;
      Dims dims;
      for (const auto& dim : input.type().tensor_type().shape().dim()) {
        dims.push_back(dim.has_dim_value() && dim.dim_value() >= 0 ? Element(dim.dim_value())
                                                                   : std::nullopt);
      }
      dims_[input.name()] = dims;
    }
    for (const auto& initializer : graph.initializer())
      record_tensor(initializer.name(), initializer);
    for (const auto& node : graph.node()) evaluate(node);
  }

  // The condition's single element, when it is known.
  std::optional<bool> truth(const std::string& name) const {
    const auto found = values_.find(name);
    if (found == values_.end() || found->second.elements.size() != 1 ||
        !found->second.elements.front()) {
      return std::nullopt;
    }
    return *found->second.elements.front() != 0;
  }

 private:
  void record_tensor(const std::string& name, const onnx::TensorProto& tensor) {
    Dims dims;
    for (const auto dim : tensor.dims()) dims.emplace_back(dim);
    dims_[name] = dims;
    if (auto value = read_integer_tensor(tensor)) values_[name] = std::move(*value);
  }

  void set_value(const std::string& name, KnownValue value) {
    Dims dims;
    for (const auto dim : value.shape) dims.emplace_back(dim);
    dims_[name] = dims;
    values_[name] = std::move(value);
  }

  const KnownValue* value(const onnx::NodeProto& node, int index) const {
    if (index >= node.input_size() || node.input(index).empty()) return nullptr;
    const auto found = values_.find(node.input(index));
    return found == values_.end() ? nullptr : &found->second;
  }

  // All elements of an optional 1-D input, when fully known.
  std::optional<std::vector<std::int64_t>> known_list(const onnx::NodeProto& node,
                                                      int index) const {
    const KnownValue* known = value(node, index);
    if (known == nullptr) return std::nullopt;
    std::vector<std::int64_t> list;
    for (const auto& element : known->elements) {
      if (!element) return std::nullopt;
      list.push_back(*element);
    }
    return list;
  }

  void evaluate(const onnx::NodeProto& node) {
    const std::string& op = node.op_type();
    if (node.output_size() == 0) return;
    const std::string& output = node.output(0);
    if (op == "Constant") {
      evaluate_constant(node, output);
      return;
    }
    if (preserves_shape(op) && node.input_size() > 0) {
      const auto found = dims_.find(node.input(0));
      if (found != dims_.end()) dims_[output] = found->second;
    }
    if (op == "Shape") {
      evaluate_shape(node, output);
    } else if (op == "Gather") {
      evaluate_gather(node, output);
    } else if (op == "Identity" || op == "Reshape" || op == "Squeeze" || op == "Unsqueeze" ||
               op == "Flatten") {
      evaluate_reshaping(node, output);
    } else if (op == "Cast") {
      evaluate_cast(node, output);
    } else if (op == "Not") {
      if (const KnownValue* input = value(node, 0)) {
        KnownValue result = *input;
        for (auto& element : result.elements) {
          if (element) element = *element == 0 ? 1 : 0;
        }
        set_value(output, std::move(result));
      }
    } else if (op == "Concat") {
      evaluate_concat(node, output);
    } else if (op == "Slice") {
      evaluate_slice(node, output);
    } else {
      evaluate_binary(node, output);
    }
  }

  void evaluate_constant(const onnx::NodeProto& node, const std::string& output) {
    if (const auto* tensor = find_attribute(node, "value")) {
      record_tensor(output, tensor->t());
    } else if (const auto* scalar = find_attribute(node, "value_int")) {
      set_value(output, {{}, {scalar->i()}});
    } else if (const auto* list = find_attribute(node, "value_ints")) {
      KnownValue known{{list->ints_size()}, {}};
      for (const auto element : list->ints()) known.elements.emplace_back(element);
      set_value(output, std::move(known));
    }
  }

  void evaluate_shape(const onnx::NodeProto& node, const std::string& output) {
    const auto found = dims_.find(node.input(0));
    if (found == dims_.end()) return;
    const auto rank = static_cast<std::int64_t>(found->second.size());
    auto clamp = [rank](std::int64_t index) {
      if (index < 0) index += rank;
      return std::clamp<std::int64_t>(index, 0, rank);
    };
    const std::int64_t start = clamp(int_attribute(node, "start", 0));
    const std::int64_t end = clamp(int_attribute(node, "end", rank));
    KnownValue known;
    for (std::int64_t axis = start; axis < end; ++axis) {
      known.elements.push_back(found->second[static_cast<std::size_t>(axis)]);
    }
    known.shape = {static_cast<std::int64_t>(known.elements.size())};
    set_value(output, std::move(known));
  }

  void evaluate_gather(const onnx::NodeProto& node, const std::string& output) {
    const KnownValue* data = value(node, 0);
    const KnownValue* indices = value(node, 1);
    if (data == nullptr || indices == nullptr || data->shape.size() != 1) return;
    const std::int64_t axis = int_attribute(node, "axis", 0);
    if (axis != 0 && axis != -1) return;
    const auto size = static_cast<std::int64_t>(data->elements.size());
    KnownValue result{indices->shape, {}};
    for (const auto& index : indices->elements) {
      if (!index) return;
      const std::int64_t position = *index < 0 ? *index + size : *index;
      if (position < 0 || position >= size) return;
      result.elements.push_back(data->elements[static_cast<std::size_t>(position)]);
    }
    set_value(output, std::move(result));
  }

  void evaluate_reshaping(const onnx::NodeProto& node, const std::string& output) {
    const KnownValue* input = value(node, 0);
    if (input == nullptr) return;
    KnownValue result = *input;
    const std::string& op = node.op_type();
    if (op == "Squeeze" || op == "Unsqueeze") {
      std::vector<std::int64_t> axes;
      if (const auto* attribute = find_attribute(node, "axes")) {
        axes.assign(attribute->ints().begin(), attribute->ints().end());
      } else if (node.input_size() > 1) {
        const auto list = known_list(node, 1);
        if (!list) return;
        axes = *list;
      }
      if (op == "Squeeze") {
        std::vector<std::int64_t> shape;
        const auto rank = static_cast<std::int64_t>(input->shape.size());
        for (std::int64_t axis = 0; axis < rank; ++axis) {
          const bool listed = axes.empty()
                                  ? input->shape[static_cast<std::size_t>(axis)] == 1
                                  : std::find_if(axes.begin(), axes.end(), [&](std::int64_t a) {
                                      return (a < 0 ? a + rank : a) == axis;
                                    }) != axes.end();
          if (!listed) shape.push_back(input->shape[static_cast<std::size_t>(axis)]);
        }
        result.shape = shape;
      } else {
        const auto rank = static_cast<std::int64_t>(input->shape.size() + axes.size());
        std::vector<bool> inserted(static_cast<std::size_t>(rank), false);
        for (auto axis : axes) {
          if (axis < 0) axis += rank;
          if (axis < 0 || axis >= rank) return;
          inserted[static_cast<std::size_t>(axis)] = true;
        }
        std::vector<std::int64_t> shape;
        std::size_t next = 0;
        for (std::size_t axis = 0; axis < inserted.size(); ++axis) {
          if (inserted[axis]) {
            shape.push_back(1);
          } else if (next < input->shape.size()) {
            shape.push_back(input->shape[next++]);
          } else {
            return;
          }
        }
        result.shape = shape;
      }
    } else if (op == "Reshape") {
      const auto target = known_list(node, 1);
      if (!target) return;
      std::vector<std::int64_t> shape;
      std::int64_t inferred = -1;
      std::int64_t product = 1;
      for (std::size_t axis = 0; axis < target->size(); ++axis) {
        std::int64_t dim = (*target)[axis];
        if (dim == 0 && int_attribute(node, "allowzero", 0) == 0) {
          if (axis >= input->shape.size()) return;
          dim = input->shape[axis];
        }
        if (dim == -1) {
          inferred = static_cast<std::int64_t>(axis);
          dim = 1;
        } else if (dim < 0) {
          return;
        }
        product *= dim;
        shape.push_back(dim);
      }
      const auto count = static_cast<std::int64_t>(input->elements.size());
      if (inferred >= 0) {
        if (product == 0 || count % product != 0) return;
        shape[static_cast<std::size_t>(inferred)] = count / product;
      } else if (product != count) {
        return;
      }
      result.shape = shape;
    } else if (op == "Flatten") {
      result.shape = {1, static_cast<std::int64_t>(input->elements.size())};
      if (int_attribute(node, "axis", 1) != 1 || input->shape.empty()) return;
      result.shape = {input->shape[0],
                      input->shape[0] == 0
                          ? 0
                          : static_cast<std::int64_t>(input->elements.size()) / input->shape[0]};
    }
    set_value(output, std::move(result));
  }

  void evaluate_cast(const onnx::NodeProto& node, const std::string& output) {
    const KnownValue* input = value(node, 0);
    if (input == nullptr) return;
    const auto to = static_cast<std::int32_t>(int_attribute(node, "to", 0));
    if (!is_integer_type(to)) return;  // float arithmetic is not proven here
    KnownValue result = *input;
    if (to == onnx::TensorProto::BOOL) {
      for (auto& element : result.elements) {
        if (element) element = *element != 0 ? 1 : 0;
      }
    }
    set_value(output, std::move(result));
  }

  void evaluate_concat(const onnx::NodeProto& node, const std::string& output) {
    KnownValue result;
    for (int i = 0; i < node.input_size(); ++i) {
      const KnownValue* input = value(node, i);
      if (input == nullptr || input->shape.size() != 1) return;
      result.elements.insert(result.elements.end(), input->elements.begin(), input->elements.end());
    }
    result.shape = {static_cast<std::int64_t>(result.elements.size())};
    set_value(output, std::move(result));
  }

  void evaluate_slice(const onnx::NodeProto& node, const std::string& output) {
    const KnownValue* data = value(node, 0);
    if (data == nullptr || data->shape.size() != 1) return;
    std::vector<std::int64_t> starts, ends, steps = {1};
    if (const auto* attribute = find_attribute(node, "starts")) {  // opset < 10
      starts.assign(attribute->ints().begin(), attribute->ints().end());
      const auto* end_attribute = find_attribute(node, "ends");
      if (end_attribute == nullptr) return;
      ends.assign(end_attribute->ints().begin(), end_attribute->ints().end());
    } else {
      auto known_starts = known_list(node, 1);
      auto known_ends = known_list(node, 2);
      if (!known_starts || !known_ends) return;
      starts = *known_starts;
      ends = *known_ends;
      if (node.input_size() > 3 && !node.input(3).empty()) {
        const auto axes = known_list(node, 3);
        if (!axes || axes->size() != 1 || ((*axes)[0] != 0 && (*axes)[0] != -1)) return;
      }
      if (node.input_size() > 4 && !node.input(4).empty()) {
        const auto known_steps = known_list(node, 4);
        if (!known_steps) return;
        steps = *known_steps;
      }
    }
    if (starts.size() != 1 || ends.size() != 1 || steps.size() != 1 || steps[0] == 0) return;
    const auto size = static_cast<std::int64_t>(data->elements.size());
    const std::int64_t step = steps[0];
    auto normalise = [size, step](std::int64_t index) {
      if (index < 0) index += size;
      return step > 0 ? std::clamp<std::int64_t>(index, 0, size)
                      : std::clamp<std::int64_t>(index, -1, size - 1);
    };
    KnownValue result;
    const std::int64_t start = normalise(starts[0]);
    const std::int64_t end = normalise(ends[0]);
    for (std::int64_t i = start; step > 0 ? i < end : i > end; i += step) {
      result.elements.push_back(data->elements[static_cast<std::size_t>(i)]);
    }
    result.shape = {static_cast<std::int64_t>(result.elements.size())};
    set_value(output, std::move(result));
  }

  void evaluate_binary(const onnx::NodeProto& node, const std::string& output) {
    using Op = std::function<std::int64_t(std::int64_t, std::int64_t)>;
    static const std::map<std::string, Op> kOps = {
        {"Equal", [](auto a, auto b) { return std::int64_t{a == b}; }},
        {"Greater", [](auto a, auto b) { return std::int64_t{a > b}; }},
        {"Less", [](auto a, auto b) { return std::int64_t{a < b}; }},
        {"GreaterOrEqual", [](auto a, auto b) { return std::int64_t{a >= b}; }},
        {"LessOrEqual", [](auto a, auto b) { return std::int64_t{a <= b}; }},
        {"And", [](auto a, auto b) { return std::int64_t{a != 0 && b != 0}; }},
        {"Or", [](auto a, auto b) { return std::int64_t{a != 0 || b != 0}; }},
        {"Xor", [](auto a, auto b) { return std::int64_t{(a != 0) != (b != 0)}; }},
        {"Add", [](auto a, auto b) { return a + b; }},
        {"Sub", [](auto a, auto b) { return a - b; }},
        {"Mul", [](auto a, auto b) { return a * b; }},
    };
    const auto op = kOps.find(node.op_type());
    if (op == kOps.end() || node.input_size() != 2) return;
    const KnownValue* left = value(node, 0);
    const KnownValue* right = value(node, 1);
    if (left == nullptr || right == nullptr) return;
    // Same shape, or one side a single element (broadcast): all shape arithmetic needs.
    KnownValue result;
    const std::size_t count = std::max(left->elements.size(), right->elements.size());
    if (left->elements.size() == right->elements.size()) {
      result.shape = left->shape.size() >= right->shape.size() ? left->shape : right->shape;
      if (left->shape.size() == right->shape.size() && left->shape != right->shape) return;
    } else if (left->elements.size() == 1) {
      result.shape = right->shape;
      if (left->shape.size() > right->shape.size()) return;
    } else if (right->elements.size() == 1) {
      result.shape = left->shape;
      if (right->shape.size() > left->shape.size()) return;
    } else {
      return;
    }
    for (std::size_t i = 0; i < count; ++i) {
      const Element& a = left->elements[left->elements.size() == 1 ? 0 : i];
      const Element& b = right->elements[right->elements.size() == 1 ? 0 : i];
      if (a && b) {
        result.elements.emplace_back(op->second(*a, *b));
      } else if (node.op_type() == "And" && ((a && *a == 0) || (b && *b == 0))) {
        result.elements.emplace_back(0);
      } else if (node.op_type() == "Or" && ((a && *a != 0) || (b && *b != 0))) {
        result.elements.emplace_back(1);
      } else {
        result.elements.emplace_back(std::nullopt);
      }
    }
    set_value(output, std::move(result));
  }

  std::map<std::string, Dims> dims_;
  std::map<std::string, KnownValue> values_;
};

// Renames value names through `renames` in a subgraph's nodes, recursively.
void rename_in_graph(onnx::GraphProto& graph, const std::map<std::string, std::string>& renames);

void rename_in_node(onnx::NodeProto& node, const std::map<std::string, std::string>& renames) {
  auto rename = [&renames](std::string* name) {
    const auto found = renames.find(*name);
    if (found != renames.end()) *name = found->second;
  };
  for (auto& input : *node.mutable_input()) rename(&input);
  for (auto& output : *node.mutable_output()) rename(&output);
  for (auto& attribute : *node.mutable_attribute()) {
    if (attribute.has_g()) rename_in_graph(*attribute.mutable_g(), renames);
    for (auto& subgraph : *attribute.mutable_graphs()) rename_in_graph(subgraph, renames);
  }
}

void rename_in_graph(onnx::GraphProto& graph, const std::map<std::string, std::string>& renames) {
  for (auto& node : *graph.mutable_node()) rename_in_node(node, renames);
  // Subgraphs name outer values in node inputs only; their own outputs and initializers are
  // local definitions, which ONNX keeps distinct from outer names.
  for (auto& output : *graph.mutable_output()) {
    const auto found = renames.find(output.name());
    if (found != renames.end()) output.set_name(found->second);
  }
}

std::string unused_name(const std::string& base, std::set<std::string>& taken) {
  std::string candidate = base + "__inlined";
  for (int counter = 1; taken.count(candidate) > 0; ++counter) {
    candidate = fmt::format("{}__inlined_{}", base, counter);
  }
  taken.insert(candidate);
  return candidate;
}

// Replaces node `index` (an If) of `graph` by the nodes of `branch`.
void inline_branch(onnx::GraphProto& graph, int index, onnx::GraphProto branch) {
  const onnx::NodeProto if_node = graph.node(index);
  // Names the rest of the graph uses: the branch's own names must not collide with them.
  std::set<std::string> taken;
  {
    onnx::GraphProto rest = graph;
    rest.mutable_node(index)->clear_attribute();
    collect_names(rest, taken);
  }
  std::set<std::string> node_names;
  for (const auto& node : graph.node()) node_names.insert(node.name());

  std::set<std::string> defined;  // values the branch defines at its top level
  for (const auto& initializer : branch.initializer()) defined.insert(initializer.name());
  for (const auto& node : branch.node()) {
    for (const auto& output : node.output()) {
      if (!output.empty()) defined.insert(output);
    }
  }
  std::map<std::string, std::string> renames;
  std::vector<std::pair<std::string, std::string>> identities;  // branch value -> If output
  std::set<std::string> renamed_to_output;
  for (int i = 0; i < branch.output_size() && i < if_node.output_size(); ++i) {
    const std::string& branch_output = branch.output(i).name();
    const std::string& if_output = if_node.output(i);
    if (if_output.empty()) continue;
    const bool produced_by_node =
        defined.count(branch_output) > 0 &&
        std::none_of(branch.initializer().begin(), branch.initializer().end(),
                     [&](const auto& tensor) { return tensor.name() == branch_output; });
    if (produced_by_node && renamed_to_output.insert(branch_output).second) {
      renames[branch_output] = if_output;
    } else {
      identities.emplace_back(branch_output, if_output);
    }
  }
  for (const auto& name : defined) {
    if (renames.count(name) == 0 && taken.count(name) > 0) renames[name] = unused_name(name, taken);
  }
  for (const auto& name : defined) taken.insert(renames.count(name) ? renames[name] : name);

  rename_in_graph(branch, renames);
  for (auto& [from, to] : identities) {
    const auto found = renames.find(from);
    if (found != renames.end()) from = found->second;
  }

  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (int i = 0; i < graph.node_size(); ++i) {
    if (i != index) {
      *nodes.Add() = graph.node(i);
      continue;
    }
    for (auto& node : *branch.mutable_node()) {
      if (!node.name().empty() && !node_names.insert(node.name()).second) {
        node.set_name(unused_name(node.name(), node_names));
      }
      *nodes.Add() = std::move(node);
    }
    for (const auto& [from, to] : identities) {
      auto* identity = nodes.Add();
      identity->set_op_type("Identity");
      identity->set_name(unused_name(if_node.name() + "_output", node_names));
      identity->add_input(from);
      identity->add_output(to);
    }
  }
  graph.mutable_node()->Swap(&nodes);
  for (auto& initializer : *branch.mutable_initializer()) {
    const auto found = renames.find(initializer.name());
    if (found != renames.end()) initializer.set_name(found->second);
    *graph.add_initializer() = std::move(initializer);
  }
}

}  // namespace

ConstantIfInlining inline_constant_ifs(const std::string& model_bytes,
                                       const std::string& model_name) {
  onnx::ModelProto model = parse_model(model_bytes, model_name);
  onnx::GraphProto& graph = *model.mutable_graph();
  ConstantIfInlining result;
  // One If at a time: the graph (and what can be proven about it) changes with each.
  for (;;) {
    const ConstantEvaluator evaluator(graph);
    int chosen = -1;
    bool take_then = false;
    int undecided = 0;
    for (int i = 0; i < graph.node_size(); ++i) {
      const auto& node = graph.node(i);
      if (node.op_type() != "If" || node.input_size() < 1) continue;
      const auto condition = evaluator.truth(node.input(0));
      const auto* branch =
          condition ? find_attribute(node, *condition ? "then_branch" : "else_branch") : nullptr;
      if (branch == nullptr || !branch->has_g()) {
        ++undecided;
        continue;
      }
      chosen = i;
      take_then = *condition;
      break;
    }
    if (chosen < 0) {
      result.ifs_kept = undecided;
      break;
    }
    const auto* branch =
        find_attribute(graph.node(chosen), take_then ? "then_branch" : "else_branch");
    inline_branch(graph, chosen, branch->g());
    ++result.ifs_inlined;
  }
  if (result.ifs_inlined == 0) {
    result.model = model_bytes;
    return result;
  }
  result.nodes_removed = prune_unused(graph).nodes;
  result.model = serialize_model(model, model_name);
  return result;
}

}  // namespace parley::graph
