#include "core/sample_stats.h"

#include <gtest/gtest.h>

#include <vector>

namespace parley {
namespace {

TEST(SampleStats, MinMedianMean) {
  const std::vector<double> odd = {3.0, 1.0, 2.0, 10.0, 4.0};
  const SampleStats stats = summarize(odd);
  EXPECT_EQ(stats.count, 5u);
  EXPECT_DOUBLE_EQ(stats.min, 1.0);
  EXPECT_DOUBLE_EQ(stats.median, 3.0);
  EXPECT_DOUBLE_EQ(stats.mean, 4.0);
  const std::vector<double> even = {4.0, 1.0, 2.0, 3.0};
  EXPECT_DOUBLE_EQ(summarize(even).median, 2.5);
  EXPECT_EQ(summarize({}).count, 0u);
  EXPECT_DOUBLE_EQ(summarize({}).median, 0.0);
}

}  // namespace
}  // namespace parley
