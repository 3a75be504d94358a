#pragma once
// The embedding front end (stages/fbank.h's Kaldi log mel, centred with a mean over a window of
// frames) as ONNX operators in front of a model that takes the features, so that an accelerator
// computes it: samples go in instead of features, and nothing of the front end runs on the host
// but the choice of each frame's window.
//
//   samples       [1, samples]   16 kHz mono in [-1, 1] covering frames [0, span), span a
//                                multiple of kFbankGraphFrameBlock
//   frame_index   [frames]       which frame of the span each output row is (float, whole)
//   window_low    [frames]       first frame of the window whose mean the row is centred with
//   window_high   [frames]       one past its last frame
//   -> features   [1, frames, bins]
//
// Every per-frame step before the power spectrum is linear in the frame's samples (DC removal,
// pre-emphasis, the window, the real DFT), so they fold into one matrix applied as a Conv1d of
// [2 * spectrum_bins, 1, window] at the frame shift; the power is the sum of the squares of the
// real and imaginary rows, which the mel matrix (duplicated for both) sums directly. A GPU may
// multiply in TF32 (10-bit mantissas): samples and the matrix are each split into a part TF32
// holds exactly and the rest, and the three products that matter run as one convolution over
// three input channels, so that quiet bins next to loud ones keep float32 accuracy. The window
// means are differences of a cumulative sum in float64, taken block by block.
#include <cstddef>
#include <string>
#include <vector>

namespace parley::graph {

// The samples must cover a whole number of blocks of this many frames (the window means are
// summed block by block).
inline constexpr std::size_t kFbankGraphFrameBlock = 128;

struct FbankGraphNames {
  static constexpr const char* kSamples = "samples";
  static constexpr const char* kFrameIndex = "frame_index";
  static constexpr const char* kWindowLow = "window_low";
  static constexpr const char* kWindowHigh = "window_high";
  static constexpr const char* kLogMel = "log_mel";  // the standalone model's uncentred output
};

struct FbankGraphSpec {
  std::size_t window_size = 0;    // samples per frame (400)
  std::size_t window_shift = 0;   // samples between frames (160)
  std::size_t spectrum_bins = 0;  // fft_size / 2 + 1 (257)
  std::size_t mel_bins = 0;       // 80
  // [2 * spectrum_bins, window_size] row-major: real rows, then imaginary rows, on samples in
  // [-1, 1] (the waveform scale is in mel_weights, squared).
  std::vector<double> frame_transform;
  // [mel_bins, spectrum_bins] row-major, already multiplied by the squared waveform scale.
  std::vector<double> mel_weights;
  double log_floor = 0.0;  // energies below are raised to it before the log

  void validate() const;
};

// A model of the front end alone, with both outputs: "log_mel" [1, span, bins] (every frame of
// the samples, uncentred) and `features_output` [1, frames, bins].
std::string build_fbank_model(const FbankGraphSpec& spec, const std::string& features_output);

// `model_bytes` with its input `features_input` ([1, frames, bins]) computed by the front end:
// the model's inputs become FbankGraphNames' four, then its others. Fails naming `model_name`
// when the input is missing or one of the front end's names is taken.
std::string prepend_fbank(const std::string& model_bytes, const std::string& features_input,
                          const FbankGraphSpec& spec, const std::string& model_name);

}  // namespace parley::graph
