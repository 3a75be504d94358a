#pragma once
// Hysteresis thresholding of frame scores (pyannote.audio utils/signal.py: `binarize` and the
// `Binarize` class), with pyannote.core Annotation semantics for the resulting regions.
//
// community-1 uses segmentation-3.0, a powerset model: its hard-decoded activations are already
// 0/1, so the segmentation `threshold` hyper-parameter does not exist and binarize_scores is not
// called. Binarize is used by to_annotation (segments.h) with onset = offset = 0.5,
// min_duration_on = 0 and min_duration_off = the pipeline's segmentation.min_duration_off
// (community-1 default: 0.0), no padding.
#include <optional>
#include <string>
#include <vector>

#include "core/ndarray.h"
#include "frames/sliding_window.h"

namespace parley::frames {

// `binarize(scores, onset, offset, initial_state)`: per class, a frame becomes active above
// onset, inactive below offset, and otherwise keeps the previous frame's state; the state
// before the first frame is `initial_state`, or (when unset) whether the first score is at
// least (onset + offset) / 2. NaN scores count as 0. scores: [frames, classes] or
// [chunks, frames, classes] (each chunk and class is a separate sequence). Returns 0/1.
// As in pyannote, an offset of 0 (or none) means offset = onset.
NdArray<float> binarize_scores(const NdArray<float>& scores, float onset = 0.5f,
                               std::optional<float> offset = std::nullopt,
                               std::optional<bool> initial_state = std::nullopt);

struct BinarizeOptions {
  float onset = 0.5f;
  std::optional<float> offset;    // unset or 0: same as onset
  double min_duration_on = 0.0;   // drop regions shorter than this
  double min_duration_off = 0.0;  // fill same-class gaps shorter than this
  double pad_onset = 0.0;         // extend each region's start earlier by this
  double pad_offset = 0.0;        // extend each region's end later by this
};

// One active region of one class (an Annotation track).
struct Region {
  Segment segment;
  int label = 0;      // class index (column of the scores)
  std::string track;  // pyannote track name ("A", "B", ...), which orders identical segments
};

// `Binarize(...)(scores)`: scores [frames, classes] on scores.window. Region boundaries are
// frame middles; a region opens at the first frame above onset and closes at the first frame
// below offset (or at the last frame). Regions shorter than 1 us are dropped (pyannote's empty
// Segment). With padding or min_duration_off > 0, regions of the same class separated by less
// than min_duration_off are merged (Annotation.support). Regions shorter than min_duration_on
// are then removed. Regions come in pyannote's itertracks order: by segment (start, end), then
// track name. A single frame yields a region from its middle to its middle (pyannote fails).
std::vector<Region> binarize_regions(const SlidingWindowFeature<float>& scores,
                                     const BinarizeOptions& options = {});

// pyannote.core's string_generator: "A".."Z", "AA".."ZZ", "AAA", ... for index 0, 1, 2, ...
std::string track_name(std::size_t index);

}  // namespace parley::frames
