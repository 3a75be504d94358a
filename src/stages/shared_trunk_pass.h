#pragma once
// How many chunks one pooled-trunk pass holds at a given chunk step.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "core/sample_rate.h"

namespace parley::stages {

// SharedTrunkConfig::chunks_per_pass counts one-second steps: at a longer step a pass holds fewer
// chunks, so that it spans the same audio and has about the same shape. Counted in chunks, a
// pass of 256 at a 2 s step spans 522 s, and a 3-minute call (one pass either way) paid the trunk
// on three times its length, most of it padding. At steps of 1 s or less, as configured.
inline std::size_t pass_chunks_at_step(std::size_t chunks_per_pass, std::int64_t step_samples) {
  if (step_samples <= kSampleRate) return chunks_per_pass;
  return std::max<std::size_t>(1, chunks_per_pass * static_cast<std::size_t>(kSampleRate) /
                                      static_cast<std::size_t>(step_samples));
}

}  // namespace parley::stages
