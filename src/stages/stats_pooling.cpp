#include "stages/stats_pooling.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"

namespace parley::stages {

std::vector<std::size_t> nearest_source_indices(std::size_t input_size, std::size_t output_size) {
  if (input_size == 0) fail("nearest interpolation: the input has no elements");
  std::vector<std::size_t> indices(output_size);
  for (std::size_t i = 0; i < output_size; ++i) {
    if (output_size == input_size) {
      indices[i] = i;
    } else if (output_size == 2 * input_size) {
      indices[i] = i >> 1;
    } else {
      // torch computes the scale and the product in float32 (aten/src/ATen/native/UpSample.h).
      const float scale = static_cast<float>(input_size) / static_cast<float>(output_size);
      const auto source = static_cast<std::size_t>(std::floor(static_cast<float>(i) * scale));
      indices[i] = std::min(source, input_size - 1);
    }
  }
  return indices;
}

std::vector<float> resample_nearest(std::span<const float> weights, std::size_t output_size) {
  const auto indices = nearest_source_indices(weights.size(), output_size);
  std::vector<float> resampled(output_size);
  for (std::size_t i = 0; i < output_size; ++i) resampled[i] = weights[indices[i]];
  return resampled;
}

PairWeights resample_pair_weights(std::span<const float> mask, std::span<const std::size_t> sources,
                                  std::span<float> weights) {
  if (weights.size() != sources.size()) {
    fail("statistics pooling: {} weights for {} resampled frames", weights.size(), sources.size());
  }
  double weight_sum = 0.0;
  double squared_weight_sum = 0.0;
  PairWeights pair;
  for (std::size_t t = 0; t < sources.size(); ++t) {
    const float weight = mask[sources[t]];
    weights[t] = weight;
    weight_sum += weight;
    squared_weight_sum += static_cast<double>(weight) * weight;
    pair.weighted_frames += weight != 0.0f ? 1 : 0;
  }
  if (pair.weighted_frames == 0) return pair;
  const float v1 = static_cast<float>(weight_sum) + 1e-8f;
  const float v2 = static_cast<float>(squared_weight_sum);
  pair.inv_weight_sum = 1.0f / v1;
  pair.inv_variance_denominator = pair.weighted_frames >= 2 ? 1.0f / (v1 - v2 / v1 + 1e-8f) : 0.0f;
  return pair;
}

void weighted_statistics(std::span<const float> frames, std::size_t features, std::size_t time,
                         std::span<const float> weights, double variance_epsilon,
                         std::span<float> stats) {
  if (frames.size() != features * time || weights.size() != time || stats.size() != 2 * features) {
    fail(
        "statistics pooling: {} frame values, {} weights and {} outputs do not fit {} features "
        "x {} frames",
        frames.size(), weights.size(), stats.size(), features, time);
  }
  double weight_sum = 0.0;
  double squared_weight_sum = 0.0;
  for (float weight : weights) {
    weight_sum += weight;
    squared_weight_sum += static_cast<double>(weight) * weight;
  }
  const float v1 = static_cast<float>(weight_sum) + 1e-8f;
  const float v2 = static_cast<float>(squared_weight_sum);
  const float variance_denominator = v1 - v2 / v1 + 1e-8f;
  // Frames of weight 0 add exactly +0 to every sum (trunk outputs are finite), so they are
  // skipped: same bits, and most of a chunk is silent for most speakers.
  std::vector<std::size_t> weighted_frames;
  weighted_frames.reserve(time);
  for (std::size_t t = 0; t < time; ++t) {
    if (weights[t] != 0.0f) weighted_frames.push_back(t);
  }
  for (std::size_t k = 0; k < features; ++k) {
    const float* row = frames.data() + k * time;
    double weighted_sum = 0.0;
    for (const std::size_t t : weighted_frames) {
      weighted_sum += static_cast<double>(weights[t]) * row[t];
    }
    const double mean = weighted_sum / v1;
    double weighted_squares = 0.0;
    for (const std::size_t t : weighted_frames) {
      const double deviation = row[t] - mean;
      weighted_squares += static_cast<double>(weights[t]) * deviation * deviation;
    }
    const double variance = weighted_squares / variance_denominator;
    stats[k] = static_cast<float>(mean);
    stats[features + k] = static_cast<float>(std::sqrt(variance + variance_epsilon));
  }
}

}  // namespace parley::stages
