#include "graph/embedding_model_test_support.h"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <cctype>
#include <cmath>
#include <limits>
#include <vector>

#include "core/error.h"

namespace parley::graph::testing {
namespace {

class Builder {
 public:
  explicit Builder(std::uint32_t seed) : state_(seed) { graph_ = model_.mutable_graph(); }

  onnx::ModelProto& model() { return model_; }
  onnx::GraphProto& graph() { return *graph_; }

  float uniform() {  // in [-1, 1)
    state_ = state_ * 1664525u + 1013904223u;
    return static_cast<float>(state_ >> 8) / 8388608.0f - 1.0f;
  }

  std::string initializer(const std::string& name, const std::vector<std::int64_t>& dims,
                          const std::vector<float>& values) {
    auto* tensor = graph_->add_initializer();
    tensor->set_name(name);
    tensor->set_data_type(onnx::TensorProto::FLOAT);
    for (auto dim : dims) tensor->add_dims(dim);
    tensor->set_raw_data(values.data(), values.size() * sizeof(float));
    return name;
  }

  std::string random_initializer(const std::string& name, const std::vector<std::int64_t>& dims,
                                 float scale) {
    std::size_t count = 1;
    for (auto dim : dims) count *= static_cast<std::size_t>(dim);
    std::vector<float> values(count);
    for (float& value : values) value = scale * uniform();
    return initializer(name, dims, values);
  }

  std::string int_constant(const std::vector<std::int64_t>& values) {
    const std::string name = fmt::format("const_{}", counter_++);
    auto* node = graph_->add_node();
    node->set_op_type("Constant");
    node->set_name(name);
    node->add_output(name);
    auto* attribute = node->add_attribute();
    attribute->set_name("value");
    attribute->set_type(onnx::AttributeProto::TENSOR);
    auto* tensor = attribute->mutable_t();
    tensor->set_data_type(onnx::TensorProto::INT64);
    tensor->add_dims(static_cast<std::int64_t>(values.size()));
    tensor->set_raw_data(values.data(), values.size() * sizeof(std::int64_t));
    return name;
  }

  std::string float_scalar(float value) {
    const std::string name = fmt::format("const_{}", counter_++);
    auto* node = graph_->add_node();
    node->set_op_type("Constant");
    node->set_name(name);
    node->add_output(name);
    auto* attribute = node->add_attribute();
    attribute->set_name("value");
    attribute->set_type(onnx::AttributeProto::TENSOR);
    auto* tensor = attribute->mutable_t();
    tensor->set_data_type(onnx::TensorProto::FLOAT);
    tensor->set_raw_data(&value, sizeof(float));
    return name;
  }

  onnx::NodeProto* node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::string& output = "") {
    auto* node = graph_->add_node();
    node->set_op_type(op);
    node->set_name(fmt::format("{}_{}", op, counter_));
    for (const auto& input : inputs) node->add_input(input);
    node->add_output(output.empty() ? fmt::format("{}_{}_out", op, counter_) : output);
    ++counter_;
    return node;
  }

  static void ints(onnx::NodeProto* node, const std::string& name,
                   const std::vector<std::int64_t>& values) {
    auto* attribute = node->add_attribute();
    attribute->set_name(name);
    attribute->set_type(onnx::AttributeProto::INTS);
    for (auto value : values) attribute->add_ints(value);
  }
  static void integer(onnx::NodeProto* node, const std::string& name, std::int64_t value) {
    auto* attribute = node->add_attribute();
    attribute->set_name(name);
    attribute->set_type(onnx::AttributeProto::INT);
    attribute->set_i(value);
  }

  std::string conv_relu(const std::string& input, std::int64_t in_channels,
                        std::int64_t out_channels, const std::string& output = "") {
    const std::string prefix = fmt::format("conv{}", counter_);
    const float scale = std::sqrt(6.0f / static_cast<float>(in_channels * 9));
    auto weight = random_initializer(prefix + ".weight", {out_channels, in_channels, 3, 3}, scale);
    auto bias = random_initializer(prefix + ".bias", {out_channels}, 0.1f);
    auto* conv = node("Conv", {input, weight, bias});
    ints(conv, "kernel_shape", {3, 3});
    ints(conv, "pads", {1, 1, 1, 1});
    ints(conv, "strides", {2, 2});
    return node("Relu", {conv->output(0)}, output)->output(0);
  }

 private:
  onnx::ModelProto model_;
  onnx::GraphProto* graph_ = nullptr;
  std::uint32_t state_;
  int counter_ = 0;
};

void tensor_type(onnx::ValueInfoProto* info, const std::string& name,
                 const std::vector<std::string>& dims) {
  info->set_name(name);
  auto* tensor = info->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::FLOAT);
  for (const auto& dim : dims) {
    auto* entry = tensor->mutable_shape()->add_dim();
    if (!dim.empty() && std::isdigit(static_cast<unsigned char>(dim[0]))) {
      entry->set_dim_value(std::stoll(dim));
    } else {
      entry->set_dim_param(dim);
    }
  }
}

}  // namespace

std::string make_test_embedding_model(const TestEmbeddingModelOptions& options) {
  Builder b(options.seed);
  b.model().set_ir_version(7);
  auto* opset = b.model().add_opset_import();
  opset->set_domain("");
  opset->set_version(14);
  b.model().set_producer_name("parley test_embedding_model");
  tensor_type(b.graph().add_input(), "feats", {"B", "T", "80"});
  tensor_type(b.graph().add_output(), "embs", {"B", std::to_string(kTestEmbeddingDim)});

  auto* transpose = b.node("Transpose", {"feats"});
  Builder::ints(transpose, "perm", {0, 2, 1});
  auto image = b.node("Unsqueeze", {transpose->output(0), b.int_constant({1})})->output(0);
  auto hidden = b.conv_relu(image, 1, 4);
  hidden = b.conv_relu(hidden, 4, 8);
  std::string frames = b.conv_relu(hidden, 8, 8, "frames");  // [B, 8, 10, T']
  if (options.reshape_to_3d) {
    const auto shape = b.int_constant({0, static_cast<std::int64_t>(kTestPooledFeatures), -1});
    frames = b.node("Reshape", {frames, shape}, "frames_3d")->output(0);
  }

  // WeSpeaker's TSTP as torch.onnx.export writes it.
  auto* mean = b.node("ReduceMean", {frames});
  Builder::ints(mean, "axes", {-1});
  Builder::integer(mean, "keepdims", 0);
  auto* mean_kept = b.node("ReduceMean", {frames});
  Builder::ints(mean_kept, "axes", {-1});
  Builder::integer(mean_kept, "keepdims", 1);
  auto centred = b.node("Sub", {frames, mean_kept->output(0)})->output(0);
  auto squared = b.node("Mul", {centred, centred})->output(0);
  auto* biased_var = b.node("ReduceMean", {squared});
  Builder::ints(biased_var, "axes", {-1});
  Builder::integer(biased_var, "keepdims", 0);
  auto shape = b.node("Shape", {frames})->output(0);
  auto* time_length = b.node("Gather", {shape, b.int_constant({-1})});
  Builder::integer(time_length, "axis", 0);
  auto* count = b.node("ReduceProd", {time_length->output(0)});
  Builder::integer(count, "keepdims", 0);
  auto* count_float = b.node("Cast", {count->output(0)});
  Builder::integer(count_float, "to", onnx::TensorProto::FLOAT);
  auto scaled = b.node("Mul", {biased_var->output(0), count_float->output(0)})->output(0);
  auto count_minus_one = b.node("Sub", {count_float->output(0), b.float_scalar(1.0f)})->output(0);
  auto variance = b.node("Div", {scaled, count_minus_one})->output(0);
  auto padded = b.node("Add", {variance, b.float_scalar(options.variance_epsilon)})->output(0);
  auto standard_deviation = b.node("Sqrt", {padded})->output(0);
  auto* mean_flat = b.node("Flatten", {mean->output(0)});
  Builder::integer(mean_flat, "axis", 1);
  auto* std_flat = b.node("Flatten", {standard_deviation});
  Builder::integer(std_flat, "axis", 1);
  auto* stats = options.std_first ? b.node("Concat", {std_flat->output(0), mean_flat->output(0)})
                                  : b.node("Concat", {mean_flat->output(0), std_flat->output(0)});
  Builder::integer(stats, "axis", 1);

  const auto stats_dim = static_cast<std::int64_t>(2 * kTestPooledFeatures);
  const auto embedding_dim = static_cast<std::int64_t>(kTestEmbeddingDim);
  const float scale = 1.0f / std::sqrt(static_cast<float>(stats_dim));
  const float bias_scale = options.nan_head ? std::numeric_limits<float>::quiet_NaN() : 0.1f;
  std::string embedding;
  if (options.matmul_head) {
    auto weight = b.random_initializer("seg_1.weight_t", {stats_dim, embedding_dim}, scale);
    auto bias = b.random_initializer("seg_1.bias", {embedding_dim}, bias_scale);
    auto product = b.node("MatMul", {stats->output(0), weight})->output(0);
    embedding = b.node("Add", {product, bias})->output(0);
  } else {
    auto weight = b.random_initializer("seg_1.weight", {embedding_dim, stats_dim}, scale);
    auto bias = b.random_initializer("seg_1.bias", {embedding_dim}, bias_scale);
    auto* gemm = b.node("Gemm", {stats->output(0), weight, bias});
    Builder::integer(gemm, "transB", 1);
    embedding = gemm->output(0);
  }
  auto mean_vec = b.random_initializer("mean_vec", {embedding_dim}, 0.05f);
  b.node("Sub", {embedding, mean_vec}, "embs");

  std::string bytes;
  if (!b.model().SerializeToString(&bytes)) fail("test embedding model: serialization failed");
  return bytes;
}

}  // namespace parley::graph::testing
