#include "stages/stats_pooling.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

#include "core/error.h"

namespace parley::stages {
namespace {

std::vector<float> pseudo_random(std::size_t count, std::uint32_t seed) {
  std::vector<float> values(count);
  for (float& value : values) {
    seed = seed * 1664525u + 1013904223u;
    value = 3.0f * (static_cast<float>(seed >> 8) / 16777216.0f) - 1.0f;
  }
  return values;
}

TEST(NearestInterpolation, MatchesTorchLegacyNearest) {
  // Values from numpy with torch's float32 formula (segmentation 589 frames -> ResNet 125).
  const auto indices = nearest_source_indices(589, 125);
  ASSERT_EQ(indices.size(), 125u);
  const std::vector<std::size_t> head{0, 4, 9, 14, 18, 23, 28, 32};
  const std::vector<std::size_t> tail{570, 574, 579, 584};
  EXPECT_EQ(std::vector<std::size_t>(indices.begin(), indices.begin() + 8), head);
  EXPECT_EQ(std::vector<std::size_t>(indices.end() - 4, indices.end()), tail);
  EXPECT_EQ(std::accumulate(indices.begin(), indices.end(), std::size_t{0}), 36456u);

  EXPECT_EQ(nearest_source_indices(3, 7), (std::vector<std::size_t>{0, 0, 0, 1, 1, 2, 2}));
  EXPECT_EQ(nearest_source_indices(7, 3), (std::vector<std::size_t>{0, 2, 4}));
  EXPECT_EQ(nearest_source_indices(4, 8), (std::vector<std::size_t>{0, 0, 1, 1, 2, 2, 3, 3}));
  EXPECT_EQ(nearest_source_indices(5, 5), (std::vector<std::size_t>{0, 1, 2, 3, 4}));
  EXPECT_THROW(nearest_source_indices(0, 5), Error);

  const std::vector<float> weights{1.0f, 0.0f, 0.5f};
  EXPECT_EQ(resample_nearest(weights, 7),
            (std::vector<float>{1.0f, 1.0f, 1.0f, 0.0f, 0.0f, 0.5f, 0.5f}));
}

TEST(WeightedStatistics, BinaryWeightsGiveMeanAndUnbiasedStdOfActiveFrames) {
  const std::size_t features = 5;
  const std::size_t time = 40;
  const auto frames = pseudo_random(features * time, 3);
  std::vector<float> weights(time, 0.0f);
  std::vector<std::size_t> active;
  for (std::size_t t = 0; t < time; ++t) {
    if (t % 3 != 0 && t < 33) {
      weights[t] = 1.0f;
      active.push_back(t);
    }
  }
  std::vector<float> stats(2 * features);
  weighted_statistics(frames, features, time, weights, 0.0, stats);
  for (std::size_t k = 0; k < features; ++k) {
    // numpy: x[active].mean(), x[active].std(ddof=1)
    double mean = 0.0;
    for (auto t : active) mean += frames[k * time + t];
    mean /= static_cast<double>(active.size());
    double squares = 0.0;
    for (auto t : active) squares += std::pow(frames[k * time + t] - mean, 2.0);
    const double deviation = std::sqrt(squares / static_cast<double>(active.size() - 1));
    EXPECT_NEAR(stats[k], mean, 1e-6);
    EXPECT_NEAR(stats[features + k], deviation, 1e-6);
  }
}

TEST(WeightedStatistics, FractionalWeightsFollowReliabilityWeightedVariance) {
  const std::size_t features = 3;
  const std::size_t time = 17;
  const auto frames = pseudo_random(features * time, 11);
  auto weights = pseudo_random(time, 5);
  for (float& weight : weights) weight = std::abs(weight);
  std::vector<float> stats(2 * features);
  weighted_statistics(frames, features, time, weights, 0.0, stats);
  double v1 = 0.0;
  double v2 = 0.0;
  for (float weight : weights) {
    v1 += weight;
    v2 += static_cast<double>(weight) * weight;
  }
  for (std::size_t k = 0; k < features; ++k) {
    double mean = 0.0;
    for (std::size_t t = 0; t < time; ++t) mean += weights[t] * frames[k * time + t];
    mean /= v1;
    double squares = 0.0;
    for (std::size_t t = 0; t < time; ++t) {
      squares += weights[t] * std::pow(frames[k * time + t] - mean, 2.0);
    }
    EXPECT_NEAR(stats[k], mean, 1e-5);
    EXPECT_NEAR(stats[features + k], std::sqrt(squares / (v1 - v2 / v1)), 1e-5);
  }
}

TEST(WeightedStatistics, UniformWeightsEqualUnweightedStatistics) {
  const std::size_t features = 4;
  const std::size_t time = 25;
  const auto frames = pseudo_random(features * time, 8);
  std::vector<float> ones(time, 1.0f);
  std::vector<float> halves(time, 0.5f);
  std::vector<float> with_ones(2 * features);
  std::vector<float> with_halves(2 * features);
  weighted_statistics(frames, features, time, ones, 0.0, with_ones);
  weighted_statistics(frames, features, time, halves, 0.0, with_halves);
  for (std::size_t i = 0; i < 2 * features; ++i) EXPECT_NEAR(with_ones[i], with_halves[i], 1e-6);
}

TEST(WeightedStatistics, NoActiveFrameGivesZerosAndOneFrameGivesZeroStd) {
  const std::size_t features = 3;
  const std::size_t time = 6;
  const auto frames = pseudo_random(features * time, 2);
  std::vector<float> stats(2 * features, 42.0f);
  weighted_statistics(frames, features, time, std::vector<float>(time, 0.0f), 0.0, stats);
  for (float value : stats) EXPECT_EQ(value, 0.0f);

  std::vector<float> one(time, 0.0f);
  one[4] = 1.0f;
  weighted_statistics(frames, features, time, one, 0.0, stats);
  for (std::size_t k = 0; k < features; ++k) {
    EXPECT_EQ(stats[k], frames[k * time + 4]);
    EXPECT_EQ(stats[features + k], 0.0f);
  }
  // WeSpeaker's epsilon appears under the square root only.
  weighted_statistics(frames, features, time, one, 1e-7, stats);
  EXPECT_NEAR(stats[features], std::sqrt(1e-7), 1e-9);
}

TEST(WeightedStatistics, RejectsMismatchedSizes) {
  std::vector<float> frames(12);
  std::vector<float> weights(4);
  std::vector<float> short_weights(3);
  std::vector<float> stats(6);
  std::vector<float> short_stats(5);
  EXPECT_THROW(weighted_statistics(frames, 3, 4, short_weights, 0.0, stats), Error);
  EXPECT_THROW(weighted_statistics(frames, 3, 4, weights, 0.0, short_stats), Error);
}

}  // namespace
}  // namespace parley::stages
