#pragma once
// Time axes of the diarization pipeline, with the exact arithmetic of pyannote.core's Segment and
// SlidingWindow (pyannote/core/segment.py) and of pyannote.audio's chunking (core/inference.py,
// Inference.slide). Frame boundaries are computed in double precision the same way pyannote does,
// so that frame indices and turn times agree with pyannote to the last bit.
//
// Two sliding windows matter for segmentation-3.0 ("community-1"):
//   chunks: start 0, duration 10 s, step 1 s (segmentation_step 0.1 x 10 s; 2 s in fast mode);
//   frames: the model's receptive field, start 0, duration 991/16000 s = 0.0619375 s,
//           step 270/16000 s = 0.016875 s; 589 frames per 10 s chunk.
#include <cstdint>
#include <span>
#include <vector>

#include "core/ndarray.h"

namespace parley::frames {

// pyannote.core's SEGMENT_PRECISION: a segment shorter than 1 us is empty.
inline constexpr double kSegmentPrecision = 1e-6;

// A time interval [start, end] in seconds (pyannote.core.Segment).
struct Segment {
  double start = 0.0;
  double end = 0.0;

  // False when shorter than kSegmentPrecision (pyannote's Segment.__bool__).
  bool non_empty() const { return (end - start) > kSegmentPrecision; }
  double duration() const { return non_empty() ? end - start : 0.0; }
  double middle() const { return 0.5 * (start + end); }
  friend bool operator==(const Segment&, const Segment&) = default;
  // Ordered by start, then end (pyannote's dataclass ordering).
  friend bool operator<(const Segment& a, const Segment& b) {
    return a.start < b.start || (a.start == b.start && a.end < b.end);
  }
};

// Half-open range of window positions [first, last).
struct FrameRange {
  std::int64_t first = 0;
  std::int64_t last = 0;
  std::int64_t size() const { return last - first; }
};

enum class Alignment { kStrict, kLoose, kCenter };

// A window of `duration` seconds sliding by `step` seconds from `start` (infinite end).
class SlidingWindow {
 public:
  // pyannote's defaults: 30 ms windows every 10 ms from 0.
  SlidingWindow() = default;
  SlidingWindow(double start, double duration, double step);

  double start() const { return start_; }
  double duration() const { return duration_; }
  double step() const { return step_; }

  // Window at position i: [start + i*step, start + i*step + duration].
  Segment operator[](std::int64_t i) const;
  // Middle of window i, computed as pyannote does (Segment.middle of operator[]).
  double middle(std::int64_t i) const { return (*this)[i].middle(); }
  // Index of the window whose middle is closest to t (np.rint: ties to even).
  std::int64_t closest_frame(double t) const;
  // Number of windows fitting into (strict), intersecting (loose) or centred on (center) a
  // span of `duration` seconds (SlidingWindow.samples).
  std::int64_t samples(double duration, Alignment mode) const;
  // Positions of the windows that intersect (loose), lie inside (strict) or are centred on
  // the ends of (center) `focus` (SlidingWindow.crop without `fixed`). May reach below 0.
  FrameRange crop(const Segment& focus, Alignment mode = Alignment::kLoose) const;
  // Segment covered by n frames from i0, each frame standing for one step around its middle;
  // frame 0 extends back to start (SlidingWindow.range_to_segment).
  Segment range_to_segment(std::int64_t i0, std::int64_t n) const;

  friend bool operator==(const SlidingWindow&, const SlidingWindow&) = default;

 private:
  double start_ = 0.0;
  double duration_ = 0.030;
  double step_ = 0.010;
};

// Values on a sliding window (pyannote.core.SlidingWindowFeature): data's first axis indexes
// window positions (chunks or frames) of `window`.
template <typename T>
struct SlidingWindowFeature {
  NdArray<T> data;
  SlidingWindow window;
};

// One 1-D convolution or pooling layer of a model's front end (kernel, stride, padding,
// dilation), as pyannote.audio.utils.receptive_field describes them.
struct ConvLayer {
  std::int64_t kernel_size = 1;
  std::int64_t stride = 1;
  std::int64_t padding = 0;
  std::int64_t dilation = 1;
};

// Output frames for `num_samples` input samples through `layers` (multi_conv_num_frames).
std::int64_t conv_num_frames(std::int64_t num_samples, std::span<const ConvLayer> layers);
// Input samples seen by `num_frames` consecutive output frames (multi_conv_receptive_field_size).
std::int64_t conv_receptive_field_size(std::int64_t num_frames, std::span<const ConvLayer> layers);
// Input sample at the centre of output frame `frame` (multi_conv_receptive_field_center).
std::int64_t conv_receptive_field_center(std::int64_t frame, std::span<const ConvLayer> layers);
// The frames sliding window of a model (pyannote Model.receptive_field):
// duration = size(1 frame), step = size(2 frames) - size(1 frame),
// start = center(frame 0) - (size - 1) / 2, all divided by the sample rate.
SlidingWindow receptive_field(std::span<const ConvLayer> layers, int sample_rate);

// SincNet front end of segmentation-3.0 / PyanNet (stride 10): conv 251, pool 3, conv 5,
// pool 3, conv 5, pool 3.
std::span<const ConvLayer> segmentation3_layers();
inline constexpr double kSegmentationChunkDuration = 10.0;
inline constexpr double kSegmentationStepRatio = 0.1;  // community-1's segmentation_step
// receptive_field(segmentation3_layers(), 16000): start 0, duration 0.0619375, step 0.016875.
SlidingWindow segmentation3_frames();
// 589: frames per 10 s chunk.
std::int64_t segmentation3_frames_per_chunk();

// How Inference.slide cuts a recording into fixed-length chunks: every complete window of
// window_samples taken every step_samples, plus one zero-padded final chunk when samples are
// left over (or when the recording is shorter than a chunk, including an empty one).
struct ChunkPlan {
  std::int64_t num_samples = 0;
  std::int64_t window_samples = 0;  // round(duration * sample_rate)
  std::int64_t step_samples = 0;    // round(step * sample_rate)
  std::int64_t num_full_chunks = 0;
  bool has_last_chunk = false;
  double duration = 0.0;  // seconds, for the chunks sliding window
  double step = 0.0;

  std::int64_t num_chunks() const { return num_full_chunks + (has_last_chunk ? 1 : 0); }
  // First sample of chunk c.
  std::int64_t chunk_offset(std::int64_t chunk) const { return chunk * step_samples; }
  // Samples of chunk c taken from the recording (the rest of the window is zero padding).
  std::int64_t valid_samples(std::int64_t chunk) const;
  // SlidingWindow(start=0, duration, step): the time axis of the chunk outputs.
  SlidingWindow chunks() const { return SlidingWindow(0.0, duration, step); }
};

// Plans the chunks of a recording of num_samples at sample_rate; chunk duration and step in
// seconds (community-1: 10 s and 1 s; fast mode 2 s). Fails when step > duration or either
// is not positive.
ChunkPlan plan_chunks(std::int64_t num_samples, int sample_rate,
                      double chunk_duration = kSegmentationChunkDuration,
                      double step = kSegmentationStepRatio * kSegmentationChunkDuration);

// Copies chunk `chunk` of `waveform` into `out` (window_samples long), zero-padding the tail.
void copy_chunk(std::span<const float> waveform, const ChunkPlan& plan, std::int64_t chunk,
                std::span<float> out);

}  // namespace parley::frames
