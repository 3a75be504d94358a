#pragma once
// The live diarizer's embedding trunk (docs/embedding.md §8.9): one per stream, it keeps the
// ResNet trunk's frames of the audio already seen and, at every step of the rolling 10 s
// window, runs the trunk only over the new fbank frames plus the receptive field around them,
// instead of over the whole window. A window's embeddings are then pooled from its slice of the
// kept frames, with the unchanged masks, pooling and linear layer
// (EmbeddingExtractor::embed_chunks_with), as the batch pipeline's shared mode pools its chunks.
//
// Geometry. The stream is a virtual recording that starts window - step samples before the
// stream's first sample (the window is zeros there, as the live diarizer fills it). Window k
// (k = 1, 2, ...) holds fbank frames [s_k, T_k) of that recording, s_k = (k - 1) * S with S
// the step in fbank frames, T_k = s_k + 998. Trunk grid frame j is centred on fbank frame
// stride * j (one grid, phase 0). Step k's pass runs over [stride * a - B, T_k), a the first
// grid frame not settled yet and B the trunk's reach to the left rounded up to the stride,
// centred with window k's mean; a frame settles once its receptive field ends before T_k and is
// never computed again; the others (the tail) are recomputed by the next pass. A window pools
// the 125 grid frames from round-half-up(s_k / stride), the shared trunk's nearest rule.
//
// What a held frame is (RollingTrunk.FramesEqualOnePassOfTheirWindow): the same frame of one
// trunk pass over [stride * floor(s_w / stride), T_w) centred with window w's mean, where w is
// the step it settled in (the current step for the tail), to float rounding. So when s_k is on
// the grid, the tail is what the trunk gives on the whole window; older frames keep an earlier
// window's mean and see real audio where a lone window pads, as in batch shared mode.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <vector>

#include "core/ndarray.h"
#include "stages/embedding.h"
#include "stages/fbank.h"

namespace parley::stages {

struct RollingTrunkConfig {
  std::size_t window_samples = 160000;  // 10 s at 16 kHz
  // Samples the window moves per step: a whole number of fbank frames (10 ms), at most the
  // window.
  std::size_t step_samples = 8000;
  // Fbank frames per trunk frame (ResNet34: 8); checked against the model's graph.
  std::size_t time_stride = 8;
  // Fbank frames a pass reaches to each side of the frames it computes: 0 takes the trunk's
  // receptive field read from the graph; more is allowed (tests), less than the field is not.
  std::size_t margin_frames = 0;
  // Threads computing fbank features (the first step's whole window).
  int threads = 1;

  void validate() const;
};

// Whether a RollingTrunk can run `extractor`'s trunk at this step; when not, `why` says so
// (for the live diarizer's automatic choice).
bool rolling_trunk_supported(const EmbeddingExtractor& extractor, std::size_t step_samples,
                             std::string* why = nullptr);

class RollingTrunk {
 public:
  // `extractor` must outlive this. Fails, saying what to do, when the step is not a whole
  // number of fbank frames or the trunk mixes the whole time axis or has another stride.
  RollingTrunk(EmbeddingExtractor& extractor, RollingTrunkConfig config);

  // Step k: takes window k (window_samples samples: the previous window moved by one step) and
  // returns the trunk's input for this step, features [1, frames, bins].
  NdArray<float> prepare(std::span<const float> window);
  // The trunk on prepare()'s features (EmbeddingExtractor::trunk_frames_from_features), timed.
  NdArray<float> run_trunk(const NdArray<float>& features);
  // Takes the trunk's output [1, pooled_features, ceil(frames / stride)] for the last prepare().
  void accept(const NdArray<float>& trunk_output);
  // prepare, run_trunk and accept.
  void advance(std::span<const float> window);

  // Embeddings [1, speakers, D] of the current window from its binarized segmentation
  // [1, frames, speakers], pooled from its 125 grid frames.
  NdArray<float> embed(const NdArray<float>& segmentation);
  // The current window's trunk frames [pooled_features, frames_per_window()].
  NdArray<float> window_frames() const;

  std::size_t steps() const { return steps_; }
  std::int64_t window_first_frame() const;  // s_k, fbank frames of the virtual recording
  std::size_t window_fbank_frames() const { return window_fbank_frames_; }    // 998
  std::size_t frames_per_window() const { return trunk_frames_per_window_; }  // 125
  std::size_t step_frames() const { return step_frames_; }                    // S
  std::size_t left_reach() const { return left_; }                            // B
  std::size_t right_reach() const { return right_; }  // what a frame needs right of its centre

  // Held grid frames [first_held(), first_held() + held()): [first_held(), first_unsettled())
  // settled, the rest the tail.
  std::size_t first_held() const { return first_held_; }
  std::size_t held() const { return held_.size(); }
  std::size_t first_unsettled() const { return first_unsettled_; }
  // Grid frame `grid`'s values [pooled_features] and the step that computed them last (for a
  // settled frame, the step it settled in).
  std::span<const float> held_frame(std::size_t grid) const;
  std::size_t held_step(std::size_t grid) const;
  // Each bin's mean over the current window, as centring uses it.
  std::vector<double> window_mean() const;

  // Work: fbank frames of the last pass, and of all passes so far.
  std::size_t last_pass_frames() const { return last_pass_frames_; }
  std::size_t total_pass_frames() const { return total_pass_frames_; }
  // Heap bytes held (log mel, sums, trunk frames): constant over any stream length.
  std::size_t bytes() const;
  // Seconds so far: features (fbank, centring), trunk (the network), pooling.
  double feature_seconds() const { return feature_seconds_; }
  double trunk_seconds() const { return trunk_seconds_; }
  double pooling_seconds() const { return pooling_seconds_; }

 private:
  // Log mel (not centred) of window frames [first, first + count), appended to mel_.
  void append_log_mel(std::span<const float> window, std::size_t first, std::size_t count);
  std::size_t window_first_grid() const;  // round-half-up(s_k / stride)

  EmbeddingExtractor& extractor_;
  RollingTrunkConfig config_;
  Fbank fbank_;  // the extractor's fbank without the per-input mean subtraction
  std::size_t hop_ = 0;
  std::size_t bins_ = 0;
  std::size_t window_fbank_frames_ = 0;      // 998
  std::size_t trunk_frames_per_window_ = 0;  // 125
  std::size_t step_frames_ = 0;              // S
  std::size_t left_ = 0;                     // B, a multiple of the stride
  std::size_t right_ = 0;

  std::size_t steps_ = 0;
  // Log mel of fbank frames [mel_first_, mel_first_ + mel_.size() / bins_).
  std::vector<float> mel_;
  std::int64_t mel_first_ = 0;
  std::vector<std::int64_t> sums_;  // per bin, fixed point, over the window's frames
  // Trunk frames [first_held_, first_held_ + held_.size()), each [pooled_features].
  std::deque<std::vector<float>> held_;
  std::deque<std::size_t> held_steps_;
  std::size_t first_held_ = 0;
  std::size_t first_unsettled_ = 0;
  std::size_t pooled_features_ = 0;
  // The last prepare()'s pass: fbank frames [pass_first_, pass_end_).
  std::int64_t pass_first_ = 0;
  std::int64_t pass_end_ = 0;
  bool prepared_ = false;

  std::size_t last_pass_frames_ = 0;
  std::size_t total_pass_frames_ = 0;
  double feature_seconds_ = 0.0;
  double trunk_seconds_ = 0.0;
  double pooling_seconds_ = 0.0;
};

}  // namespace parley::stages
