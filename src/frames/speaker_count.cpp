#include "frames/speaker_count.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "frames/aggregation.h"

namespace parley::frames {

SlidingWindowFeature<int> speaker_count(const NdArray<float>& binarized,
                                        const SlidingWindow& chunks, const SlidingWindow& frames,
                                        std::pair<double, double> warm_up) {
  if (binarized.rank() != 3) {
    fail("speaker count: segmentations must be [chunks, frames, speakers] (got {} dimensions)",
         binarized.rank());
  }
  // The trimmed frames are read in place: a trimmed copy (as pyannote makes) would double the
  // largest array of a long recording (250 MB for ten hours) just when clustering needs memory.
  const TrimmedFrames kept = trimmed_frames(binarized.dim(1), chunks, warm_up);
  const std::size_t num_chunks = binarized.dim(0);
  const std::size_t local_speakers = binarized.dim(2);

  // np.sum(axis=-1) in float32, sequentially over the few local speakers.
  NdArray<float> active({num_chunks, kept.count, 1});
  for (std::size_t c = 0; c < num_chunks; ++c) {
    for (std::size_t f = 0; f < kept.count; ++f) {
      float total = 0.0f;
      for (std::size_t s = 0; s < local_speakers; ++s) {
        total += binarized(c, kept.first + f, s);
      }
      active(c, f, 0) = total;
    }
  }

  AggregateOptions options;
  options.hamming = false;
  options.missing = 0.0f;
  options.skip_average = false;
  const SlidingWindowFeature<float> average = aggregate(active, kept.chunks, frames, options);

  NdArray<int> count({average.data.dim(0)});
  for (std::size_t i = 0; i < count.size(); ++i) {
    // np.rint(...).astype(np.uint8)
    const float rounded = std::nearbyint(average.data(i));
    count(i) = std::clamp(static_cast<int>(rounded), 0, 255);
  }
  return {std::move(count), average.window};
}

NdArray<int> cap_count(const NdArray<int>& count, int max_speakers) {
  NdArray<int> capped = count;
  for (int& value : capped.values()) {
    value = std::min(value, max_speakers);
  }
  return capped;
}

int max_count(const NdArray<int>& count) {
  int largest = 0;
  for (int value : count.values()) {
    largest = std::max(largest, value);
  }
  return largest;
}

}  // namespace parley::frames
