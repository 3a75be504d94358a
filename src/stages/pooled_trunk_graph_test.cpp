// graph/pooled_trunk_graph.h with inputs that run past their data (valid_frames, masked by
// graph/valid_frames_mask.h) against the host's path on the shorter input: the trunk run on the
// valid frames alone (its convolutions pad with zeros) and stats pooling on the host.
#include "graph/pooled_trunk_graph.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "graph/embedding_model_test_support.h"
#include "graph/graph_edit.h"
#include "stages/embedding.h"
#include "stages/stats_pooling.h"
#include "stages/trunk_test_support.h"

namespace parley::stages {
namespace {

using Names = graph::PooledTrunkGraphNames;

double cosine(const float* a, const float* b, std::size_t n) {
  double dot = 0.0, na = 0.0, nb = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    dot += static_cast<double>(a[i]) * b[i];
    na += static_cast<double>(a[i]) * a[i];
    nb += static_cast<double>(b[i]) * b[i];
  }
  return dot / std::sqrt(na * nb);
}

constexpr std::size_t kBins = 80;
constexpr std::size_t kFrames = 400;      // fbank frames of the pass
constexpr std::size_t kTrunkFrames = 50;  // kFrames / 8 (three stride-2 convolutions)
constexpr std::size_t kPairs = 3;

// Features [items, kFrames, kBins]: speech-like values where valid; past each item's valid
// frames values far from them (as the log mel of zero samples is), which a trunk that let them
// in would turn into different frames at the end.
NdArray<float> pass_features(const std::vector<std::size_t>& valid) {
  NdArray<float> features({valid.size(), kFrames, kBins});
  std::uint32_t seed = 99;
  for (std::size_t b = 0; b < valid.size(); ++b) {
    for (std::size_t f = 0; f < kFrames; ++f) {
      for (std::size_t m = 0; m < kBins; ++m) {
        seed = seed * 1664525u + 1013904223u;
        const double noise = static_cast<double>(seed >> 8) / 16777216.0 - 0.5;
        features(b, f, m) = static_cast<float>(
            f < valid[b] ? std::sin(0.05 * static_cast<double>(f * (m + 3))) + noise
                         : -15.0 + noise);
      }
    }
  }
  return features;
}

struct PassInputs {
  NdArray<float> weights{std::vector<std::size_t>{1}};  // [items, kPairs, kTrunkFrames]
  NdArray<float> inv_weight_sums{std::vector<std::size_t>{1}};
  NdArray<float> inv_denominators{std::vector<std::size_t>{1}};
};

// Per item: a pair over every valid trunk frame, one over its last twelve with soft weights
// (what a last chunk with speech up to its end weights) and one on the last valid frame only.
PassInputs pair_weights(const std::vector<std::size_t>& valid_trunk) {
  const std::size_t items = valid_trunk.size();
  PassInputs inputs;
  inputs.weights = NdArray<float>({items, kPairs, kTrunkFrames}, 0.0f);
  inputs.inv_weight_sums = NdArray<float>({items, kPairs, 1});
  inputs.inv_denominators = NdArray<float>({items, kPairs, 1});
  const std::vector<std::size_t> identity = nearest_source_indices(kTrunkFrames, kTrunkFrames);
  for (std::size_t b = 0; b < items; ++b) {
    const std::size_t last = valid_trunk[b];
    std::vector<std::vector<float>> masks(kPairs, std::vector<float>(kTrunkFrames, 0.0f));
    for (std::size_t t = 0; t < last; ++t) masks[0][t] = 1.0f;
    for (std::size_t t = last > 12 ? last - 12 : 0; t < last; ++t)
      masks[1][t] = t % 3 == 0 ? 0.5f : 1.0f;
    masks[2][last - 1] = 1.0f;
    for (std::size_t p = 0; p < kPairs; ++p) {
      const PairWeights pair = resample_pair_weights(
          masks[p], identity,
          std::span<float>(inputs.weights.data() + (b * kPairs + p) * kTrunkFrames, kTrunkFrames));
      inputs.inv_weight_sums(b, p, 0) = pair.inv_weight_sum;
      inputs.inv_denominators(b, p, 0) = pair.inv_variance_denominator;
    }
  }
  return inputs;
}

// The host's path for item `b`: the trunk on its first `valid` frames, stats pooling of the
// pairs' weights on those trunk frames, the linear layer. [kPairs, D]
NdArray<float> host_embeddings(EmbeddingExtractor& extractor, const NdArray<float>& features,
                               const NdArray<float>& weights, std::size_t b, std::size_t valid) {
  NdArray<float> shorter({1, valid, kBins});
  std::memcpy(shorter.data(), features.data() + b * kFrames * kBins, valid * kBins * sizeof(float));
  const NdArray<float> frames = extractor.trunk_frames_from_features(shorter);
  const std::size_t time = frames.dim(2);
  NdArray<float> cut({1, kPairs, time});
  for (std::size_t p = 0; p < kPairs; ++p) {
    std::memcpy(cut.data() + p * time, weights.data() + (b * kPairs + p) * kTrunkFrames,
                time * sizeof(float));
  }
  return extractor.embed_frames(frames, cut);
}

// Item 0 holds 333 valid frames (42 trunk frames, the last one from a partial stride), item 1
// is valid throughout; item 2 holds 1 frame, so that every padding of every convolution
// reaches past its end. Each matches the host's path on its valid frames; fed as all valid,
// item 0 does not (what the masks fix).
TEST(PooledTrunkGraph, FramesPastValidFramesActAsTheTrunksZeroPadding) {
  EmbeddingExtractor extractor(graph::testing::make_test_embedding_model(), "test model",
                               testing::test_model_config());
  const std::vector<std::size_t> valid = {333, kFrames, 9};
  const std::vector<std::size_t> valid_trunk = {42, kTrunkFrames, 2};
  const NdArray<float> features = pass_features(valid);
  const PassInputs inputs = pair_weights(valid_trunk);
  NdArray<float> valid_frames({valid.size()});
  for (std::size_t b = 0; b < valid.size(); ++b) valid_frames(b) = static_cast<float>(valid[b]);
  const NdArray<float> graph = extractor.embed_pooled_in_graph(
      features, inputs.weights, inputs.inv_weight_sums, inputs.inv_denominators, valid_frames);
  const std::size_t dimension = extractor.dimension();
  ASSERT_EQ(graph.size(), valid.size() * kPairs * dimension);
  for (std::size_t b = 0; b < valid.size(); ++b) {
    const NdArray<float> host = host_embeddings(extractor, features, inputs.weights, b, valid[b]);
    for (std::size_t p = 0; p < kPairs; ++p) {
      const float* ours = graph.data() + (b * kPairs + p) * dimension;
      double largest = 0.0;
      double difference = 0.0;
      for (std::size_t k = 0; k < dimension; ++k) {
        largest = std::max(largest, static_cast<double>(std::abs(host(0, p, k))));
        difference = std::max(difference, static_cast<double>(std::abs(ours[k] - host(0, p, k))));
      }
      EXPECT_GT(cosine(ours, &host(0, p, 0), dimension), 0.999999) << "item " << b << " pair " << p;
      EXPECT_LT(difference, 1e-4 * std::max(largest, 1.0)) << "item " << b << " pair " << p;
    }
  }

  // The same pass told that every frame holds audio: the frames past the end reach the last
  // trunk frames through the convolutions' windows.
  const NdArray<float> unmasked = extractor.embed_pooled_in_graph(
      features, inputs.weights, inputs.inv_weight_sums, inputs.inv_denominators,
      NdArray<float>({valid.size()}, static_cast<float>(kFrames)));
  const NdArray<float> host = host_embeddings(extractor, features, inputs.weights, 0, valid[0]);
  EXPECT_LT(cosine(unmasked.data() + 1 * dimension, &host(0, 1, 0), dimension), 0.999)
      << "the tail pair must see the frames past the end when they are not masked";
}

// The walk masks every convolution of the test model (three) and the pooled graph declares the
// valid length as a [B] float input, after the pass's other inputs.
TEST(PooledTrunkGraph, DeclaresValidFramesAndMasksEveryConvolution) {
  const auto split = graph::split_before_statistics_pooling(
      graph::testing::make_test_embedding_model(), "test model");
  const auto model =
      graph::parse_model(graph::build_pooled_trunk_model(split, "test model", 1e-7), "pooled");
  std::vector<std::string> inputs;
  for (const auto& input : model.graph().input()) inputs.push_back(input.name());
  EXPECT_EQ(inputs,
            (std::vector<std::string>{Names::kFeatures, Names::kPairWeights, Names::kInvWeightSums,
                                      Names::kInvVarianceDenominators, Names::kValidFrames}));
  std::set<std::string> produced;
  for (const auto& node : model.graph().node()) {
    if (node.op_type() == "Conv") {
      EXPECT_EQ(node.input(0).rfind("pooled/masked_input", 0), 0u)
          << node.name() << " reads " << node.input(0);
      EXPECT_EQ(produced.count(node.input(0)), 1u) << "nodes stay topologically sorted";
    }
    for (const auto& output : node.output()) produced.insert(output);
  }
}

}  // namespace
}  // namespace parley::stages
