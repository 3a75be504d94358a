#include "stages/fbank.h"

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <numbers>
#include <vector>

#include "core/error.h"

namespace parley::stages {
namespace {

// An independent float64 computation of Kaldi's fbank definition (feat/feature-fbank.cc,
// feat/mel-computations.cc, feat/feature-window.cc), written from the definition rather than from
// fbank.cpp: a direct O(N^2) DFT instead of an FFT, filters evaluated per (bin, frequency) with
// Kaldi's left/right triangle test rather than min(up, down).
std::vector<std::vector<double>> reference_log_mel(const std::vector<float>& samples,
                                                   bool subtract_mean) {
  const double sample_rate = 16000.0;
  const int frame_length = 400;  // 25 ms
  const int frame_shift = 160;   // 10 ms
  const int padded = 512;        // next power of two
  const int num_bins = 80;
  const double pi = std::numbers::pi;
  auto mel = [](double hz) { return 1127.0 * std::log(1.0 + hz / 700.0); };

  const double mel_low = mel(20.0);
  const double mel_high = mel(sample_rate / 2.0);
  const double delta = (mel_high - mel_low) / (num_bins + 1);

  std::vector<std::vector<double>> result;
  if (static_cast<int>(samples.size()) < frame_length) return result;
  const int frames = 1 + (static_cast<int>(samples.size()) - frame_length) / frame_shift;
  for (int f = 0; f < frames; ++f) {
    std::vector<double> x(frame_length);
    for (int n = 0; n < frame_length; ++n) {
      x[n] = static_cast<double>(samples[f * frame_shift + n]) * 32768.0;
    }
    double mean = 0.0;
    for (double v : x) mean += v;
    mean /= frame_length;
    for (double& v : x) v -= mean;
    std::vector<double> emphasized(frame_length);
    emphasized[0] = x[0] - 0.97 * x[0];
    for (int n = 1; n < frame_length; ++n) emphasized[n] = x[n] - 0.97 * x[n - 1];
    for (int n = 0; n < frame_length; ++n) {
      emphasized[n] *= 0.54 - 0.46 * std::cos(2.0 * pi * n / (frame_length - 1));
    }
    std::vector<double> power(padded / 2 + 1);
    for (int k = 0; k <= padded / 2; ++k) {
      std::complex<double> sum = 0.0;
      for (int n = 0; n < frame_length; ++n) {  // samples beyond 400 are the zero padding
        sum += emphasized[n] * std::polar(1.0, -2.0 * pi * k * n / padded);
      }
      power[k] = std::norm(sum);
    }
    std::vector<double> row(num_bins);
    for (int b = 0; b < num_bins; ++b) {
      const double left = mel_low + b * delta;
      const double center = mel_low + (b + 1) * delta;
      const double right = mel_low + (b + 2) * delta;
      double energy = 0.0;
      for (int k = 0; k < padded / 2; ++k) {
        const double m = mel(k * sample_rate / padded);
        if (m > left && m < right) {
          const double weight =
              m <= center ? (m - left) / (center - left) : (right - m) / (right - center);
          energy += weight * power[k];
        }
      }
      row[b] =
          std::log(std::max(energy, static_cast<double>(std::numeric_limits<float>::epsilon())));
    }
    result.push_back(row);
  }
  if (subtract_mean) {
    for (int b = 0; b < num_bins; ++b) {
      double mean = 0.0;
      for (const auto& row : result) mean += row[b];
      mean /= static_cast<double>(result.size());
      for (auto& row : result) row[b] -= mean;
    }
  }
  return result;
}

// Speech-like test audio in [-1, 1]: two tones, a chirp and deterministic noise.
std::vector<float> test_audio(std::size_t count) {
  std::vector<float> audio(count);
  std::uint32_t state = 12345u;
  for (std::size_t i = 0; i < count; ++i) {
    state = state * 1664525u + 1013904223u;
    const double noise = (static_cast<double>(state >> 8) / 16777216.0 - 0.5) * 0.05;
    const double t = static_cast<double>(i) / 16000.0;
    const double value = 0.3 * std::sin(2.0 * std::numbers::pi * 220.0 * t) +
                         0.1 * std::sin(2.0 * std::numbers::pi * 3150.0 * t) +
                         0.05 * std::sin(2.0 * std::numbers::pi * (500.0 + 4000.0 * t) * t) + noise;
    audio[i] = static_cast<float>(value);
  }
  return audio;
}

double max_abs_difference(const NdArray<float>& features,
                          const std::vector<std::vector<double>>& reference) {
  double worst = 0.0;
  for (std::size_t f = 0; f < reference.size(); ++f) {
    for (std::size_t b = 0; b < reference[f].size(); ++b) {
      worst = std::max(worst, std::abs(static_cast<double>(features(f, b)) - reference[f][b]));
    }
  }
  return worst;
}

TEST(Fbank, DefaultsArePyannoteWeSpeakerConfiguration) {
  const FbankConfig config;
  EXPECT_EQ(config.window_size(), 400u);
  EXPECT_EQ(config.window_shift(), 160u);
  EXPECT_EQ(config.fft_size(), 512u);
  EXPECT_EQ(config.num_mel_bins, 80u);
  EXPECT_EQ(config.window, FbankWindow::kHamming);
  EXPECT_DOUBLE_EQ(config.waveform_scale, 32768.0);
  EXPECT_TRUE(config.subtract_mean);
  EXPECT_NE(config.to_string().find("window=hamming"), std::string::npos);
}

TEST(Fbank, MatchesDirectDftReferenceWithoutCentering) {
  FbankConfig config;
  config.subtract_mean = false;
  const Fbank fbank(config);
  const auto audio = test_audio(8000);  // 0.5 s -> 48 frames
  const auto features = fbank.compute(audio);
  const auto reference = reference_log_mel(audio, false);
  ASSERT_EQ(features.dim(0), reference.size());
  ASSERT_EQ(features.dim(0), 48u);
  ASSERT_EQ(features.dim(1), 80u);
  const double worst = max_abs_difference(features, reference);
  RecordProperty("max_abs_difference", std::to_string(worst));
  EXPECT_LT(worst, 1e-4);
}

TEST(Fbank, MatchesDirectDftReferenceWithCentering) {
  const Fbank fbank(FbankConfig{});
  const auto audio = test_audio(12345);  // not a whole number of frames
  const auto features = fbank.compute(audio);
  const auto reference = reference_log_mel(audio, true);
  ASSERT_EQ(features.dim(0), 1u + (12345u - 400u) / 160u);
  EXPECT_LT(max_abs_difference(features, reference), 1e-4);
}

TEST(Fbank, FrameCountFollowsSnipEdges) {
  const Fbank fbank(FbankConfig{});
  EXPECT_EQ(fbank.num_frames(160000), 998u);  // one 10 s chunk
  EXPECT_EQ(fbank.num_frames(400), 1u);
  EXPECT_EQ(fbank.num_frames(559), 1u);
  EXPECT_EQ(fbank.num_frames(560), 2u);
  EXPECT_EQ(fbank.num_frames(399), 0u);
  EXPECT_EQ(fbank.num_frames(0), 0u);
}

TEST(Fbank, ShorterThanOneFrameGivesNoFrames) {
  const Fbank fbank(FbankConfig{});
  const std::vector<float> audio(399, 0.25f);
  const auto features = fbank.compute(audio);
  EXPECT_EQ(features.dim(0), 0u);
  EXPECT_EQ(features.dim(1), 80u);
}

TEST(Fbank, SilenceSitsAtTheLogFloor) {
  FbankConfig config;
  config.subtract_mean = false;
  const Fbank fbank(config);
  const std::vector<float> silence(1600, 0.0f);
  const auto features = fbank.compute(silence);
  ASSERT_EQ(features.dim(0), 8u);
  const float floor = std::log(std::numeric_limits<float>::epsilon());  // -15.942385
  for (float value : features.values()) EXPECT_FLOAT_EQ(value, floor);

  // A constant (DC) signal is removed per frame, so it is silence too.
  const std::vector<float> dc(1600, 0.5f);
  const auto dc_features = fbank.compute(dc);
  for (float value : dc_features.values()) EXPECT_FLOAT_EQ(value, floor);

  const Fbank centred(FbankConfig{});
  const auto centred_features = centred.compute(silence);
  for (float value : centred_features.values()) EXPECT_EQ(value, 0.0f);
}

TEST(Fbank, ToneEnergyPeaksInTheFilterAroundItsFrequency) {
  FbankConfig config;
  config.subtract_mean = false;
  const Fbank fbank(config);
  const double tone_hz = 1000.0;
  std::vector<float> audio(4000);
  for (std::size_t i = 0; i < audio.size(); ++i) {
    audio[i] = static_cast<float>(
        0.5 * std::sin(2.0 * std::numbers::pi * tone_hz * static_cast<double>(i) / 16000.0));
  }
  const auto features = fbank.compute(audio);
  // Centre frequencies of the triangles, from the mel formula.
  auto mel = [](double hz) { return 1127.0 * std::log(1.0 + hz / 700.0); };
  const double delta = (mel(8000.0) - mel(20.0)) / 81.0;
  const double tone_mel = mel(tone_hz);
  std::size_t nearest_bin = 0;
  for (std::size_t b = 1; b < 80; ++b) {
    const double center = mel(20.0) + static_cast<double>(b + 1) * delta;
    const double best = mel(20.0) + static_cast<double>(nearest_bin + 1) * delta;
    if (std::abs(center - tone_mel) < std::abs(best - tone_mel)) nearest_bin = b;
  }
  std::size_t loudest = 0;
  for (std::size_t b = 1; b < 80; ++b) {
    if (features(2, b) > features(2, loudest)) loudest = b;
  }
  EXPECT_EQ(loudest, nearest_bin);
}

TEST(Fbank, WaveformScaleShiftsLogEnergiesByTwiceItsLog) {
  FbankConfig unscaled;
  unscaled.subtract_mean = false;
  unscaled.waveform_scale = 1.0;
  FbankConfig scaled = unscaled;
  scaled.waveform_scale = 32768.0;
  const auto audio = test_audio(2000);
  const auto low = Fbank(unscaled).compute(audio);
  const auto high = Fbank(scaled).compute(audio);
  const double shift = 2.0 * std::log(32768.0);
  for (std::size_t i = 0; i < low.size(); ++i) {
    if (low(i) > -10.0f) {
      EXPECT_NEAR(high(i) - low(i), shift, 1e-3);
    }
  }
}

TEST(Fbank, FiltersAreKaldiTriangles) {
  const Fbank fbank(FbankConfig{});
  const auto filters = fbank.mel_filters();
  ASSERT_EQ(filters.dim(0), 80u);
  ASSERT_EQ(filters.dim(1), 257u);
  for (std::size_t b = 0; b < 80; ++b) {
    double peak = 0.0;
    for (std::size_t k = 0; k < 257; ++k) {
      EXPECT_GE(filters(b, k), 0.0);
      EXPECT_LE(filters(b, k), 1.0);
      peak = std::max(peak, filters(b, k));
    }
    EXPECT_GT(peak, 0.4) << "filter " << b << " has no FFT bin near its centre";
    EXPECT_EQ(filters(b, 256), 0.0);  // Nyquist bin carries no weight, as in Kaldi
  }
}

TEST(Fbank, RejectsInvalidConfigurations) {
  FbankConfig config;
  config.num_mel_bins = 2;
  EXPECT_THROW(config.validate(), Error);
  config = FbankConfig{};
  config.low_freq = 9000.0;
  EXPECT_THROW(config.validate(), Error);
  config = FbankConfig{};
  config.preemphasis = 1.5;
  EXPECT_THROW(config.validate(), Error);
  config = FbankConfig{};
  config.round_to_power_of_two = false;
  config.frame_length_ms = 25.0625;  // 401 samples: odd FFT size
  EXPECT_THROW(config.validate(), Error);
}

TEST(Fbank, ComputeIntoChecksTheOutputSize) {
  const Fbank fbank(FbankConfig{});
  const auto audio = test_audio(1000);
  std::vector<float> too_small(10);
  EXPECT_THROW(fbank.compute_into(audio, too_small), Error);
}

}  // namespace
}  // namespace parley::stages
