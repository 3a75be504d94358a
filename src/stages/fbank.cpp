#include "stages/fbank.h"

#include <fftw3.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <numbers>

#include "core/error.h"

namespace parley::stages {
namespace {

// Kaldi floors mel energies at float epsilon before the log, whatever the precision used.
constexpr double kLogFloor = std::numeric_limits<float>::epsilon();

double mel_scale(double frequency) { return 1127.0 * std::log(1.0 + frequency / 700.0); }

std::size_t next_power_of_two(std::size_t value) {
  std::size_t power = 1;
  while (power < value) power <<= 1;
  return power;
}

// FFTW's planner is not thread-safe; executing a finished plan is.
std::mutex& fftw_planner_mutex() {
  static std::mutex mutex;
  return mutex;
}

}  // namespace

struct Fbank::FftPlan {
  fftw_plan plan = nullptr;
  std::size_t size = 0;

  explicit FftPlan(std::size_t fft_size) : size(fft_size) {
    std::vector<double> input(fft_size);
    std::vector<fftw_complex> output(fft_size / 2 + 1);
    std::lock_guard lock(fftw_planner_mutex());
    // FFTW_ESTIMATE picks the algorithm without timing trials, so every run (and every machine
    // with the same FFTW build) uses the same one: features are reproducible bit for bit.
    // FFTW_UNALIGNED lets any buffer be used with the plan.
    plan = fftw_plan_dft_r2c_1d(static_cast<int>(fft_size), input.data(), output.data(),
                                FFTW_ESTIMATE | FFTW_UNALIGNED);
    if (plan == nullptr) fail("fbank: FFTW could not plan a {}-point real FFT", fft_size);
  }
  ~FftPlan() {
    std::lock_guard lock(fftw_planner_mutex());
    fftw_destroy_plan(plan);
  }
  FftPlan(const FftPlan&) = delete;
  FftPlan& operator=(const FftPlan&) = delete;
};

const char* fbank_window_name(FbankWindow window) {
  switch (window) {
    case FbankWindow::kHamming:
      return "hamming";
    case FbankWindow::kHanning:
      return "hanning";
    case FbankWindow::kPovey:
      return "povey";
    case FbankWindow::kRectangular:
      return "rectangular";
  }
  return "?";
}

std::size_t FbankConfig::window_size() const {
  return static_cast<std::size_t>(sample_rate * frame_length_ms * 0.001);
}

std::size_t FbankConfig::window_shift() const {
  return static_cast<std::size_t>(sample_rate * frame_shift_ms * 0.001);
}

std::size_t FbankConfig::fft_size() const {
  return round_to_power_of_two ? next_power_of_two(window_size()) : window_size();
}

void FbankConfig::validate() const {
  if (!(sample_rate > 0.0))
    fail("fbank config: sample_rate must be positive (got {})", sample_rate);
  if (num_mel_bins < 4) {
    fail("fbank config: num_mel_bins must be at least 4, as in Kaldi (got {})", num_mel_bins);
  }
  if (window_size() < 2) {
    fail("fbank config: frame_length_ms={} gives fewer than 2 samples per frame", frame_length_ms);
  }
  if (window_shift() < 1) {
    fail("fbank config: frame_shift_ms={} gives no samples between frames", frame_shift_ms);
  }
  if (fft_size() % 2 != 0) {
    fail("fbank config: FFT size {} is odd; set round_to_power_of_two or change frame_length_ms",
         fft_size());
  }
  if (!(preemphasis >= 0.0 && preemphasis <= 1.0)) {
    fail("fbank config: preemphasis must be within [0, 1] (got {})", preemphasis);
  }
  const double nyquist = 0.5 * sample_rate;
  const double high = high_freq <= 0.0 ? high_freq + nyquist : high_freq;
  if (!(low_freq >= 0.0 && low_freq < nyquist && high > 0.0 && high <= nyquist &&
        low_freq < high)) {
    fail("fbank config: mel range low_freq={} high_freq={} does not fit below Nyquist {}", low_freq,
         high_freq, nyquist);
  }
  if (!(waveform_scale > 0.0)) {
    fail("fbank config: waveform_scale must be positive (got {})", waveform_scale);
  }
}

std::string FbankConfig::to_string() const {
  return fmt::format(
      "FbankConfig(sample_rate={}, num_mel_bins={}, frame_length_ms={}, frame_shift_ms={}, "
      "window={}, preemphasis={}, remove_dc_offset={}, fft_size={}, low_freq={}, high_freq={}, "
      "waveform_scale={}, subtract_mean={}, dither=0, snip_edges=true)",
      sample_rate, num_mel_bins, frame_length_ms, frame_shift_ms, fbank_window_name(window),
      preemphasis, remove_dc_offset, fft_size(), low_freq, high_freq, waveform_scale,
      subtract_mean);
}

Fbank::Fbank(const FbankConfig& config) : config_(config) {
  config_.validate();
  const std::size_t window_size = config_.window_size();
  const std::size_t fft_size = config_.fft_size();

  window_.resize(window_size);
  const double arg = 2.0 * std::numbers::pi / static_cast<double>(window_size - 1);
  for (std::size_t i = 0; i < window_size; ++i) {
    const double cosine = std::cos(arg * static_cast<double>(i));
    switch (config_.window) {
      case FbankWindow::kHamming:
        window_[i] = 0.54 - 0.46 * cosine;
        break;
      case FbankWindow::kHanning:
        window_[i] = 0.5 - 0.5 * cosine;
        break;
      case FbankWindow::kPovey:
        window_[i] = std::pow(0.5 - 0.5 * cosine, 0.85);
        break;
      case FbankWindow::kRectangular:
        window_[i] = 1.0;
        break;
    }
  }

  // Triangles equally spaced on the mel scale between low_freq and high_freq; FFT bin k sits at
  // k * sample_rate / fft_size. The Nyquist bin (k = fft_size / 2) always has weight 0.
  const double nyquist = 0.5 * config_.sample_rate;
  const double high_freq =
      config_.high_freq <= 0.0 ? config_.high_freq + nyquist : config_.high_freq;
  const double mel_low = mel_scale(config_.low_freq);
  const double mel_high = mel_scale(high_freq);
  const double mel_delta = (mel_high - mel_low) / static_cast<double>(config_.num_mel_bins + 1);
  const double bin_width = config_.sample_rate / static_cast<double>(fft_size);
  filters_.resize(config_.num_mel_bins);
  for (std::size_t m = 0; m < config_.num_mel_bins; ++m) {
    const double left = mel_low + static_cast<double>(m) * mel_delta;
    const double center = left + mel_delta;
    const double right = center + mel_delta;
    MelFilter& filter = filters_[m];
    bool started = false;
    for (std::size_t k = 0; k < fft_size / 2; ++k) {
      const double mel = mel_scale(bin_width * static_cast<double>(k));
      const double up = (mel - left) / (center - left);
      const double down = (right - mel) / (right - center);
      const double weight = std::max(0.0, std::min(up, down));
      if (weight > 0.0) {
        if (!started) {
          filter.first_bin = k;
          started = true;
        }
        filter.weights.resize(k - filter.first_bin + 1, 0.0);
        filter.weights[k - filter.first_bin] = weight;
      }
    }
  }
  plan_ = std::make_unique<FftPlan>(fft_size);
}

Fbank::~Fbank() = default;

std::size_t Fbank::num_frames(std::size_t num_samples) const {
  const std::size_t window_size = config_.window_size();
  if (num_samples < window_size) return 0;
  return 1 + (num_samples - window_size) / config_.window_shift();
}

NdArray<double> Fbank::mel_filters() const {
  NdArray<double> filters({config_.num_mel_bins, config_.fft_size() / 2 + 1});
  for (std::size_t m = 0; m < filters_.size(); ++m) {
    for (std::size_t j = 0; j < filters_[m].weights.size(); ++j) {
      filters(m, filters_[m].first_bin + j) = filters_[m].weights[j];
    }
  }
  return filters;
}

graph::FbankGraphSpec Fbank::graph_spec() const {
  const std::size_t window_size = config_.window_size();
  const std::size_t fft_size = config_.fft_size();
  const std::size_t spectrum_bins = fft_size / 2 + 1;
  graph::FbankGraphSpec spec;
  spec.window_size = window_size;
  spec.window_shift = config_.window_shift();
  spec.spectrum_bins = spectrum_bins;
  spec.mel_bins = config_.num_mel_bins;
  spec.log_floor = kLogFloor;
  // Row r of the transform is the DFT row (times the window) carried back through
  // pre-emphasis and DC removal: for a row vector u, (u P)[j] = u[j] - p u[j + 1] with the
  // first sample's own (1 - p), and (u C)[j] = u[j] - mean(u).
  spec.frame_transform.resize(2 * spectrum_bins * window_size);
  const double p = config_.preemphasis;
  std::vector<double> row(window_size);
  std::vector<double> carried(window_size);
  for (std::size_t r = 0; r < 2 * spectrum_bins; ++r) {
    const std::size_t k = r % spectrum_bins;
    const bool imaginary = r >= spectrum_bins;
    for (std::size_t n = 0; n < window_size; ++n) {
      // Exact angle reduction: k n mod fft_size before the division.
      const double angle = 2.0 * std::numbers::pi * static_cast<double>((k * n) % fft_size) /
                           static_cast<double>(fft_size);
      row[n] = window_[n] * (imaginary ? -std::sin(angle) : std::cos(angle));
    }
    if (p != 0.0) {
      for (std::size_t j = 0; j < window_size; ++j) {
        const double next = j + 1 < window_size ? row[j + 1] : 0.0;
        carried[j] = (j == 0 ? (1.0 - p) * row[0] : row[j]) - p * next;
      }
      row = carried;
    }
    if (config_.remove_dc_offset) {
      double sum = 0.0;
      for (const double value : row) sum += value;
      const double mean = sum / static_cast<double>(window_size);
      for (double& value : row) value -= mean;
    }
    std::copy(row.begin(), row.end(), spec.frame_transform.begin() + r * window_size);
  }
  const double scale = config_.waveform_scale * config_.waveform_scale;
  spec.mel_weights.assign(config_.num_mel_bins * spectrum_bins, 0.0);
  for (std::size_t m = 0; m < filters_.size(); ++m) {
    for (std::size_t j = 0; j < filters_[m].weights.size(); ++j) {
      spec.mel_weights[m * spectrum_bins + filters_[m].first_bin + j] =
          filters_[m].weights[j] * scale;
    }
  }
  return spec;
}

NdArray<float> Fbank::compute(std::span<const float> samples) const {
  NdArray<float> features({num_frames(samples.size()), config_.num_mel_bins});
  compute_into(samples, std::span<float>(features.data(), features.size()));
  return features;
}

void Fbank::compute_into(std::span<const float> samples, std::span<float> features) const {
  const std::size_t frames = num_frames(samples.size());
  const std::size_t bins = config_.num_mel_bins;
  if (features.size() != frames * bins) {
    fail("fbank: output holds {} values, {} frames x {} bins need {}", features.size(), frames,
         bins, frames * bins);
  }
  const std::size_t window_size = config_.window_size();
  const std::size_t shift = config_.window_shift();
  const std::size_t fft_size = config_.fft_size();
  std::vector<double> frame(fft_size, 0.0);
  std::vector<fftw_complex> spectrum(fft_size / 2 + 1);
  std::vector<double> power(fft_size / 2 + 1);
  std::vector<double> log_mel(frames * bins);

  for (std::size_t f = 0; f < frames; ++f) {
    const float* source = samples.data() + f * shift;
    for (std::size_t i = 0; i < window_size; ++i) {
      frame[i] = static_cast<double>(source[i]) * config_.waveform_scale;
    }
    if (config_.remove_dc_offset) {
      double sum = 0.0;
      for (std::size_t i = 0; i < window_size; ++i) sum += frame[i];
      const double mean = sum / static_cast<double>(window_size);
      for (std::size_t i = 0; i < window_size; ++i) frame[i] -= mean;
    }
    if (config_.preemphasis != 0.0) {
      // Backwards so each sample is corrected with its uncorrected predecessor; the first
      // sample uses itself (Kaldi's convention).
      for (std::size_t i = window_size - 1; i > 0; --i) {
        frame[i] -= config_.preemphasis * frame[i - 1];
      }
      frame[0] -= config_.preemphasis * frame[0];
    }
    for (std::size_t i = 0; i < window_size; ++i) frame[i] *= window_[i];
    std::fill(frame.begin() + static_cast<std::ptrdiff_t>(window_size), frame.end(), 0.0);

    fftw_execute_dft_r2c(plan_->plan, frame.data(), spectrum.data());
    for (std::size_t k = 0; k < power.size(); ++k) {
      power[k] = spectrum[k][0] * spectrum[k][0] + spectrum[k][1] * spectrum[k][1];
    }
    for (std::size_t m = 0; m < bins; ++m) {
      const MelFilter& filter = filters_[m];
      double energy = 0.0;
      for (std::size_t j = 0; j < filter.weights.size(); ++j) {
        energy += filter.weights[j] * power[filter.first_bin + j];
      }
      log_mel[f * bins + m] = std::log(std::max(energy, kLogFloor));
    }
  }

  std::vector<double> bin_mean(bins, 0.0);
  if (config_.subtract_mean && frames > 0) {
    for (std::size_t f = 0; f < frames; ++f) {
      for (std::size_t m = 0; m < bins; ++m) bin_mean[m] += log_mel[f * bins + m];
    }
    for (double& mean : bin_mean) mean /= static_cast<double>(frames);
  }
  for (std::size_t f = 0; f < frames; ++f) {
    for (std::size_t m = 0; m < bins; ++m) {
      features[f * bins + m] = static_cast<float>(log_mel[f * bins + m] - bin_mean[m]);
    }
  }
}

}  // namespace parley::stages
