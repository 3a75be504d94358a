#pragma once
// Overlap-add of per-chunk frame scores into one score per frame of the recording
// (pyannote.audio core/inference.py, Inference.aggregate and Inference.trim).
//
// Each chunk c starts at frame closest_frame(chunk_start(c) + frames.duration / 2) of the output
// axis SlidingWindow(start=chunks.start, frames.duration, frames.step). Its frames are weighted
// by an optional Hamming window and by the warm-up window (epsilon in the first/last warm_up
// seconds), NaN scores are "missing" (weight 0), and the weighted sum is divided by the summed
// weights unless skip_average. Frames no chunk covered with a non-NaN score get `missing`.
// The number of output frames is closest_frame(end of the last chunk + frames.duration / 2) + 1.
//
// Arithmetic follows numpy's: sums are kept in float32, each chunk's contribution is computed
// in float64 and added in float64 then rounded to float32 (numpy's `float32 += float64`), and
// the average is a float32 division. Integer-valued inputs (binary activations, speaker counts)
// therefore give results identical to pyannote.
#include <limits>
#include <span>
#include <utility>
#include <vector>

#include "core/ndarray.h"
#include "frames/sliding_window.h"

namespace parley::frames {

struct AggregateOptions {
  // Left/right warm-up, in seconds of each chunk, whose frames weigh only `epsilon`.
  std::pair<double, double> warm_up{0.0, 0.0};
  double epsilon = 1e-12;
  // Weight each chunk's frames with a Hamming window (np.hamming).
  bool hamming = false;
  // Value of frames without any (non-NaN) score (pyannote's default NaN; the pipeline uses 0).
  float missing = std::numeric_limits<float>::quiet_NaN();
  // Return the weighted sum instead of the weighted average.
  bool skip_average = false;
};

// aggregate, one chunk at a time: for scores computed chunk by chunk, so that the whole
// [chunks, frames, classes] array never has to be held (reconstruction's clustered
// segmentations would take 8 bytes per chunk, frame and speaker). Same arithmetic, same result.
class ChunkAggregator {
 public:
  ChunkAggregator(std::size_t num_chunks, std::size_t frames_per_chunk, std::size_t num_classes,
                  const SlidingWindow& chunks, const SlidingWindow& frames,
                  const AggregateOptions& options = {});
  // Adds chunk `chunk`'s scores, [frames_per_chunk, num_classes] row-major (NaN: missing).
  // Add the chunks in increasing order: the float32 sums round as aggregate's then.
  void add(std::size_t chunk, std::span<const double> scores);
  // The same when only the columns `classes` hold scores (every other one is all NaN, and is
  // not read).
  void add(std::size_t chunk, std::span<const double> scores, std::span<const std::size_t> classes);
  // [num_frames, num_classes] on SlidingWindow(chunks.start, frames.duration, frames.step).
  SlidingWindowFeature<float> result() const;

 private:
  std::size_t num_chunks_;
  std::size_t frames_per_chunk_;
  std::size_t num_classes_;
  SlidingWindow chunks_;
  SlidingWindow output_frames_;
  AggregateOptions options_;
  std::vector<double> hamming_;  // per frame of a chunk
  std::vector<double> warm_up_;
  std::vector<std::size_t> all_classes_;
  std::size_t frame_count_;
  NdArray<float> sum_;
  NdArray<float> weight_;
  std::vector<bool> covered_;
};

// scores: [num_chunks, frames_per_chunk, num_classes] on `chunks`; NaN marks missing values.
// Returns [num_frames, num_classes] on SlidingWindow(chunks.start, frames.duration, frames.step).
// Scores are read as T and widened to double exactly (T = float or double).
template <typename T>
SlidingWindowFeature<float> aggregate(const NdArray<T>& scores, const SlidingWindow& chunks,
                                      const SlidingWindow& frames,
                                      const AggregateOptions& options = {});

// What trim() keeps of each chunk of `frames_per_chunk` frames: `count` frames from `first`,
// on a chunks window that starts warm_up.first * duration later and lasts
// (1 - first - second) * duration (Inference.trim). Fails when no frame is left.
struct TrimmedFrames {
  std::size_t first = 0;
  std::size_t count = 0;
  SlidingWindow chunks;
};
TrimmedFrames trimmed_frames(std::size_t frames_per_chunk, const SlidingWindow& chunks,
                             std::pair<double, double> warm_up);

// Drops warm_up.first / warm_up.second (fractions of the chunk duration, rounded to frames)
// from both ends of every chunk: [C, F, K] -> [C, F', K] (trimmed_frames says which).
SlidingWindowFeature<float> trim(const SlidingWindowFeature<float>& chunk_scores,
                                 std::pair<double, double> warm_up);

// np.hamming(length): 0.54 + 0.46 cos(pi n / (length - 1)), n = 1 - length, 3 - length, ...
std::vector<double> hamming_window(std::size_t length);

// Frame of the output axis where a chunk starting at `chunk_start` seconds begins.
std::int64_t chunk_start_frame(double chunk_start, const SlidingWindow& frames);

// Number of output frames for num_chunks chunks on `chunks` (see above).
std::int64_t aggregated_frame_count(std::int64_t num_chunks, const SlidingWindow& chunks,
                                    const SlidingWindow& frames);

}  // namespace parley::frames
