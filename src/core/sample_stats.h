#pragma once
// Minimum, median and mean of repeated measurements (`parley bench` reports all three: the
// minimum is the least disturbed run, the median the typical one, the mean what a batch costs).
#include <cstddef>
#include <span>

namespace parley {

struct SampleStats {
  std::size_t count = 0;
  double min = 0.0;
  double median = 0.0;  // mean of the two middle values for an even count
  double mean = 0.0;
};

// All zeros for no values.
SampleStats summarize(std::span<const double> values);

}  // namespace parley
