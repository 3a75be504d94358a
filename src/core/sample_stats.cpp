#include "core/sample_stats.h"

#include <algorithm>
#include <numeric>
#include <vector>

namespace parley {

SampleStats summarize(std::span<const double> values) {
  SampleStats stats;
  stats.count = values.size();
  if (values.empty()) return stats;
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  const std::size_t middle = sorted.size() / 2;
  stats.min = sorted.front();
  stats.median =
      sorted.size() % 2 == 1 ? sorted[middle] : 0.5 * (sorted[middle - 1] + sorted[middle]);
  stats.mean =
      std::accumulate(sorted.begin(), sorted.end(), 0.0) / static_cast<double>(sorted.size());
  return stats;
}

}  // namespace parley
