#pragma once
// Feature sums in fixed point (2^-32 units, int64): integer addition is associative, so a
// window's sum, and the mean made from it, is the same bit for bit whichever block, thread or
// running update computed it (the shared trunk's sliding mean, the live rolling trunk's window
// mean).
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace parley::stages {

inline constexpr double kFixedPointScale = 4294967296.0;

inline std::int64_t to_fixed_point(float value) {
  return static_cast<std::int64_t>(std::llround(static_cast<double>(value) * kFixedPointScale));
}

// The mean of `count` values whose fixed-point sum is `sum`.
inline double fixed_point_mean(std::int64_t sum, std::size_t count) {
  return static_cast<double>(sum) / (kFixedPointScale * static_cast<double>(count));
}

}  // namespace parley::stages
