#pragma once
// The embedding model rebuilt for the shared trunk on an accelerator: the trunk, then masked
// statistics pooling of many (chunk, speaker) pairs and the final linear layer, in one graph.
// With the pooling on the host, every pass copied its whole feature map [2560, frames] back and
// the CPU sliced it per chunk (longer than the trunk itself; docs/embedding.md, 8.7); here only the
// pairs' weights go in and [pairs, D] embeddings come out.
//
//   features          [B, frames, bins]         centred log mel of one pass
//   pair_weights      [B, pairs, trunk_frames]  each pair's mask on the pass's trunk frames
//                                               (zero outside its chunk)
//   inv_weight_sums   [B, pairs, 1]             1 / (sum of the weights + 1e-8), as StatsPool
//   inv_variance_denominators [B, pairs, 1]     1 / (v1 - v2 / v1 + 1e-8); 0 for a pair with
//                                               fewer than two weighted frames (variance 0)
//   valid_frames      [B]                       frames of `features` that hold the recording
//                                               (whole numbers as floats); the trunk treats the
//                                               rest as past the end of its input
//   -> embeddings     [B, pairs, D]
// The dynamic axes are named as above (the source model's own names for the features' axes are
// replaced), so dimension overrides for a static-shape provider are the same for any model.
//
// A pass has one length whatever it holds (static shapes), so the last pass of a recording runs
// past its end. graph/valid_frames_mask.h masks each convolution's input at valid_frames
// (scaled to its resolution), so the trunk frames equal those of a trunk run on the valid frames
// alone, zero padding and all, and the pass mean below leaves the frames past the end out.
//
// The weighted moments are two matrix products of the weights with the map and its square,
// taken about each feature's mean over the pass so that the variance does not come from the
// difference of two large numbers: var = (S2 - S1^2 / v1) / denominator, S = sums about that
// mean. The normalisers come from the host so that they are rounded exactly as
// stages/stats_pooling.h rounds them.
#include <string>

#include "graph/onnx_graph.h"

namespace parley::graph {

struct PooledTrunkGraphNames {
  static constexpr const char* kFeatures = "features";
  static constexpr const char* kPairWeights = "pair_weights";
  static constexpr const char* kInvWeightSums = "inv_weight_sums";
  static constexpr const char* kInvVarianceDenominators = "inv_variance_denominators";
  static constexpr const char* kValidFrames = "valid_frames";
  static constexpr const char* kEmbeddings = "embeddings";
};

// The serialized model. `variance_epsilon` is added under the square root as in
// stages::weighted_statistics. Fails naming `model_name` when the trunk's output is not
// [B, ..., frames'] with time last and 2 * features = the linear layer's input.
std::string build_pooled_trunk_model(const StatisticsPoolingSplit& split,
                                     const std::string& model_name, double variance_epsilon);

}  // namespace parley::graph
