#pragma once
// Weighted statistics pooling exactly as pyannote.audio's StatsPool
// (pyannote/audio/models/blocks/pooling.py): per feature row, the weighted mean and the
// weighted "unbiased" standard deviation over time, with weights first resampled to the
// frame count by torch.nn.functional.interpolate(mode="nearest").
#include <cstddef>
#include <span>
#include <vector>

namespace parley::stages {

// Source index of each output element of torch's 1-D nearest interpolation (the legacy
// "nearest" mode): floor(i * float(in / out)), capped at in - 1; identity when the sizes match
// and i / 2 when the output is exactly twice the input.
std::vector<std::size_t> nearest_source_indices(std::size_t input_size, std::size_t output_size);

// `weights` resampled to `output_size` with nearest_source_indices.
std::vector<float> resample_nearest(std::span<const float> weights, std::size_t output_size);

// frames: [features, time] row-major; weights: [time]; stats: [2 * features] = (mean, std).
//   v1 = sum(w) + 1e-8;  mean = sum(w x) / v1;  v2 = sum(w^2)
//   var = sum(w (x - mean)^2) / (v1 - v2 / v1 + 1e-8);  std = sqrt(var + variance_epsilon)
// pyannote uses variance_epsilon = 0. With all-zero weights every statistic is exactly 0.
// Sums run in double; the three normalisers are rounded to float32 as torch computes them, so
// that one active frame gives std 0 as in pyannote (float32: 1 + 1e-8 == 1).
void weighted_statistics(std::span<const float> frames, std::size_t features, std::size_t time,
                         std::span<const float> weights, double variance_epsilon,
                         std::span<float> stats);

// One pair's weights for pooling inside the graph (graph/pooled_trunk_graph.h): `mask`
// resampled through `sources` (nearest_source_indices) into `weights`, and the two normalisers
// rounded to float32 as weighted_statistics rounds them.
struct PairWeights {
  std::size_t weighted_frames = 0;        // frames of non-zero weight; 0: nothing to pool
  float inv_weight_sum = 0.0f;            // 1 / (sum + 1e-8)
  float inv_variance_denominator = 0.0f;  // 1 / (v1 - v2 / v1 + 1e-8); 0 below two frames,
                                          // whose variance is exactly 0
};
PairWeights resample_pair_weights(std::span<const float> mask, std::span<const std::size_t> sources,
                                  std::span<float> weights);

}  // namespace parley::stages
