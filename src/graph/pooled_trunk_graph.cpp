#include "graph/pooled_trunk_graph.h"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <set>
#include <vector>

#include "core/error.h"
#include "graph/graph_edit.h"
#include "graph/valid_frames_mask.h"

namespace parley::graph {
namespace {

using Names = PooledTrunkGraphNames;

// Renames the graph input `from` to `to` where the top-level graph reads it.
void rename_input(onnx::GraphProto& graph, const std::string& from, const std::string& to,
                  const std::string& model_name) {
  bool found = false;
  for (auto& input : *graph.mutable_input()) {
    if (input.name() == from) {
      input.set_name(to);
      found = true;
    }
  }
  if (!found) fail("{}: the trunk has no input '{}'", model_name, from);
  for (auto& node : *graph.mutable_node()) {
    for (auto& attribute : node.attribute()) {
      if (attribute.has_g() || attribute.graphs_size() > 0) {
        fail("{}: the trunk has subgraphs; parley cannot pool it on the accelerator", model_name);
      }
    }
    for (auto& input : *node.mutable_input()) {
      if (input == from) input = to;
    }
  }
}

// Gives the dynamic axes of input `name` parley's own symbols, whatever the source model called
// them, so that a static-shape provider's dimension overrides can name them.
void name_dynamic_axes(onnx::GraphProto& graph, const std::string& name,
                       const std::vector<std::string>& symbols) {
  for (auto& input : *graph.mutable_input()) {
    if (input.name() != name) continue;
    auto* shape = input.mutable_type()->mutable_tensor_type()->mutable_shape();
    for (int axis = 0; axis < shape->dim_size() && axis < static_cast<int>(symbols.size());
         ++axis) {
      auto* dim = shape->mutable_dim(axis);
      if (!dim->has_dim_value()) dim->set_dim_param(symbols[static_cast<std::size_t>(axis)]);
    }
  }
}

}  // namespace

std::string build_pooled_trunk_model(const StatisticsPoolingSplit& split,
                                     const std::string& model_name, double variance_epsilon) {
  if (split.time_axis != -1) {
    fail(
        "{}: the statistics are taken over axis {} of '{}'; pooling on the accelerator needs "
        "time as the last axis (use embedding_mode exact)",
        model_name, split.time_axis, split.pooling_input);
  }
  const std::size_t stats_dim = split.head.input_dim();
  if (stats_dim == 0 || stats_dim % 2 != 0) {
    fail("{}: a linear layer over {} statistics is not (mean, std) of features", model_name,
         stats_dim);
  }
  const auto features = static_cast<std::int64_t>(stats_dim / 2);
  const auto dimension = static_cast<std::int64_t>(split.head.output_dim());

  onnx::ModelProto model = parse_model(split.trunk_model, model_name + " (trunk)");
  onnx::GraphProto& graph = *model.mutable_graph();
  std::set<std::string> trunk_names;
  collect_names(graph, trunk_names);
  for (const char* name :
       {Names::kFeatures, Names::kPairWeights, Names::kInvWeightSums,
        Names::kInvVarianceDenominators, Names::kValidFrames, Names::kEmbeddings}) {
    if (trunk_names.count(name) > 0 && name != split.features_input) {
      fail(
          "{}: the trunk already has a tensor named '{}', which pooling on the accelerator "
          "needs; use embedding_mode exact with this model",
          model_name, name);
    }
  }
  rename_input(graph, split.features_input, Names::kFeatures, model_name);
  name_dynamic_axes(graph, Names::kFeatures, {"B", "frames", "bins"});
  graph.clear_output();
  const std::int64_t opset = default_domain_opset(model);
  GraphAppender g(graph, opset, "pooled");
  g.float_input(Names::kPairWeights, {"B", "pairs", "trunk_frames"});
  g.float_input(Names::kInvWeightSums, {"B", "pairs", "1"});
  g.float_input(Names::kInvVarianceDenominators, {"B", "pairs", "1"});
  g.float_input(Names::kValidFrames, {"B"});
  const ValidFramesMask valid =
      mask_past_valid_frames(graph, g, opset, Names::kFeatures,
                             /*input_time_axis=*/1, Names::kValidFrames, split.pooling_input);

  // [B, features, frames'] about each feature's mean over the pass's valid frames, the others
  // zero (the weights leave them out; zeros keep whatever the trunk made of them out of the
  // products).
  const std::string map =
      g.node("Reshape", {split.pooling_input, g.ints("map_shape", {0, features, -1})}, "map");
  std::string map_mean;  // [B, features, 1]
  std::string centred;
  if (valid.output_length.empty()) {  // the walk lost time before any window: every frame
    map_mean = g.mean_over_last_axis(map, "map_mean");
    centred = g.node("Sub", {map, map_mean}, "centred");
  } else {
    const std::string mask = g.cast(
        unsqueeze(g, opset, valid_time_mask(g, opset, map, 2, valid.output_length, "map_valid"),
                  {1}, "map_valid_broadcast"),
        onnx::TensorProto::FLOAT, "map_valid_float");  // [B, 1, frames']
    // The mean of the valid frames: that of the masked map over the share of valid frames,
    // exactly the plain mean where every frame is valid (the share is then 1).
    const std::string share = g.node(
        "Max", {g.mean_over_last_axis(mask, "valid_share"), g.floats("min_share", {}, {1e-30f})},
        "valid_share_positive");
    map_mean = g.node(
        "Div",
        {g.mean_over_last_axis(g.node("Mul", {map, mask}, "map_valid_only"), "map_sum"), share},
        "map_valid_mean");
    centred = g.node("Mul", {g.node("Sub", {map, map_mean}, "centred_all"), mask}, "centred");
  }
  const std::string by_time = g.node("Transpose", {centred}, "by_time");  // [B, frames', F]
  g.ints_attribute("perm", {0, 2, 1});
  const std::string squares = g.node("Mul", {by_time, by_time}, "squares");
  const std::string sums = g.node("MatMul", {Names::kPairWeights, by_time}, "sums");
  const std::string square_sums = g.node("MatMul", {Names::kPairWeights, squares}, "square_sums");
  const std::string shifted_mean = g.node("Mul", {sums, Names::kInvWeightSums}, "shifted_mean");
  const std::string explained = g.node("Mul", {shifted_mean, sums}, "explained");
  const std::string deviations = g.node("Sub", {square_sums, explained}, "deviations");
  // Rounding can leave a tiny negative where the variance is 0.
  const std::string clipped = g.node("Relu", {deviations}, "deviations_clipped");
  const std::string variance =
      g.node("Mul", {clipped, Names::kInvVarianceDenominators}, "variance");
  const std::string epsilon =
      g.floats("variance_epsilon", {}, {static_cast<float>(variance_epsilon)});
  const std::string std_dev =
      g.node("Sqrt", {g.node("Add", {variance, epsilon}, "variance_eps")}, "std");
  const std::string mean_row = g.node("Transpose", {map_mean}, "map_mean_row");  // [B, 1, F]
  g.ints_attribute("perm", {0, 2, 1});
  const std::string mean = g.node("Add", {shifted_mean, mean_row}, "mean");
  const std::string stats = g.node("Concat", {mean, std_dev}, "stats");  // [B, pairs, 2F]
  g.int_attribute("axis", 2);

  // The linear layer: stats [B, pairs, 2F] x weight^T [2F, D] + bias.
  std::vector<float> transposed(static_cast<std::size_t>(2 * features * dimension));
  for (std::int64_t out = 0; out < dimension; ++out) {
    for (std::int64_t in = 0; in < 2 * features; ++in) {
      transposed[static_cast<std::size_t>(in * dimension + out)] =
          split.head.weight(static_cast<std::size_t>(out), static_cast<std::size_t>(in));
    }
  }
  const std::string head_weight = g.floats("head_weight", {2 * features, dimension}, transposed);
  const std::string head_bias = g.floats("head_bias", {dimension}, split.head.bias);
  const std::string projected = g.node("MatMul", {stats, head_weight}, "projected");
  auto* added = graph.add_node();
  added->set_op_type("Add");
  added->set_name("pooled/embeddings");
  added->add_input(projected);
  added->add_input(head_bias);
  added->add_output(Names::kEmbeddings);

  auto* output = graph.add_output();
  output->set_name(Names::kEmbeddings);
  auto* tensor = output->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::FLOAT);
  tensor->mutable_shape()->add_dim()->set_dim_param("B");
  tensor->mutable_shape()->add_dim()->set_dim_param("pairs");
  tensor->mutable_shape()->add_dim()->set_dim_value(dimension);
  return serialize_model(model, model_name + " (trunk with pooling)");
}

}  // namespace parley::graph
