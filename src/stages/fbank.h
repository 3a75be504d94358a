#pragma once
// Kaldi-compatible log mel filterbank features, configured by default exactly as pyannote feeds
// WeSpeaker ResNet34 (pyannote.audio 4.x models/embedding/wespeaker/__init__.py, compute_fbank):
// torchaudio.compliance.kaldi.fbank(waveform * 2^15, num_mel_bins=80, frame_length=25,
// frame_shift=10, dither=0, window_type="hamming", sample_frequency=16000, snip_edges=True,
// round_to_power_of_two=True, use_energy=False), then the mean over time subtracted per bin.
// docs/embedding.md spells out every step; fbank_test.cpp checks it against a direct DFT.
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/ndarray.h"
#include "core/sample_rate.h"
#include "graph/fbank_graph.h"

namespace parley::stages {

enum class FbankWindow { kHamming, kHanning, kPovey, kRectangular };

struct FbankConfig {
  double sample_rate = kSampleRate;
  std::size_t num_mel_bins = 80;
  double frame_length_ms = 25.0;
  double frame_shift_ms = 10.0;
  FbankWindow window = FbankWindow::kHamming;
  double preemphasis = 0.97;
  bool remove_dc_offset = true;
  // Zero-pads each 400-sample frame to a 512-point FFT.
  bool round_to_power_of_two = true;
  double low_freq = 20.0;
  // <= 0 means an offset below the Nyquist frequency (Kaldi's convention); 0 is Nyquist itself.
  double high_freq = 0.0;
  // pyannote multiplies [-1, 1] samples by 1 << 15 before calling Kaldi's fbank.
  double waveform_scale = 32768.0;
  // pyannote centres the features: subtracts each bin's mean over all frames of the input.
  bool subtract_mean = true;

  void validate() const;
  std::string to_string() const;

  std::size_t window_size() const;   // samples per frame (400)
  std::size_t window_shift() const;  // samples between frame starts (160)
  std::size_t fft_size() const;      // 512
};

const char* fbank_window_name(FbankWindow window);

class Fbank {
 public:
  explicit Fbank(const FbankConfig& config);
  ~Fbank();
  Fbank(const Fbank&) = delete;
  Fbank& operator=(const Fbank&) = delete;

  const FbankConfig& config() const { return config_; }

  // Kaldi's snip_edges frame count: frames that fit entirely, 0 when shorter than one frame.
  std::size_t num_frames(std::size_t num_samples) const;

  // Features [num_frames(samples), num_mel_bins]; [0, num_mel_bins] when shorter than a frame.
  NdArray<float> compute(std::span<const float> samples) const;
  // Same, written to `features` (num_frames * num_mel_bins floats, row-major).
  void compute_into(std::span<const float> samples, std::span<float> features) const;

  // The triangular mel filters [num_mel_bins, fft_size / 2 + 1] (for inspection and tests).
  NdArray<double> mel_filters() const;

  // This front end as graph/fbank_graph.h builds it: every step up to the power spectrum as
  // one matrix, the mel filters with the waveform scale squared in them. Its features are
  // centred with each frame's window mean, whatever subtract_mean says.
  graph::FbankGraphSpec graph_spec() const;

 private:
  struct MelFilter {
    std::size_t first_bin = 0;
    std::vector<double> weights;
  };
  struct FftPlan;

  FbankConfig config_;
  std::vector<double> window_;
  std::vector<MelFilter> filters_;
  std::unique_ptr<FftPlan> plan_;
};

}  // namespace parley::stages
