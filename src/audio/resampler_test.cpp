#include "audio/resampler.h"

#include <sndfile.h>

#include <cmath>

#include <gtest/gtest.h>

#include "audio/audio_files_test_support.h"
#include "audio/mono_resampled_stream.h"
#include "core/error.h"
#include "testing/temporary_directory.h"

namespace parley::audio {
namespace {

using parley::testing::TemporaryDirectory;

std::vector<float> resample_whole(std::span<const float> input, double from, double to) {
  Resampler resampler(from, to);
  std::vector<float> output;
  resampler.process(input, output);
  resampler.flush(output);
  return output;
}

class ResampleTo16k : public ::testing::TestWithParam<int> {};

// A 1 kHz tone keeps its frequency, amplitude and duration through the rate change.
TEST_P(ResampleTo16k, ToneSurvives) {
  const int input_rate = GetParam();
  constexpr double kSeconds = 2.0;
  const auto input_frames = static_cast<std::size_t>(kSeconds * input_rate);
  const auto input = testing::sine(1000.0, input_rate, input_frames, 0.5f);
  const auto output = resample_whole(input, input_rate, 16000);
  EXPECT_NEAR(static_cast<double>(output.size()), kSeconds * 16000, 2.0);

  const auto middle = std::span<const float>(output).subspan(4000, 16000);
  EXPECT_NEAR(testing::tone_amplitude(middle, 1000.0, 16000), 0.5, 0.005);
  // Nothing of the tone leaks to neighbouring frequencies.
  EXPECT_LT(testing::tone_amplitude(middle, 1100.0, 16000), 0.005);
  // Sample-by-sample the output is the same tone (soxr HQ is linear phase, delay compensated).
  const auto expected = testing::sine(1000.0, 16000, output.size(), 0.5f);
  double max_error = 0.0;
  for (std::size_t index = 1000; index + 1000 < output.size(); ++index) {
    max_error = std::max(max_error, std::abs(static_cast<double>(output[index]) - expected[index]));
  }
  EXPECT_LT(max_error, 1e-3);
}

INSTANTIATE_TEST_SUITE_P(Rates, ResampleTo16k, ::testing::Values(8000, 22050, 44100, 48000));

TEST(Resampler, AnySplitOfTheInputGivesIdenticalOutput) {
  const auto input = testing::sine(440.0, 44100, 44100, 0.3f);
  const auto whole = resample_whole(input, 44100, 16000);
  for (const std::size_t piece : {1u, 7u, 1000u, 8192u}) {
    Resampler resampler(44100, 16000);
    std::vector<float> output;
    for (std::size_t start = 0; start < input.size(); start += piece) {
      const std::size_t count = std::min(piece, input.size() - start);
      resampler.process(std::span<const float>(input).subspan(start, count), output);
    }
    resampler.flush(output);
    EXPECT_EQ(output, whole) << "pieces of " << piece;
  }
}

TEST(Resampler, RejectsNonPositiveRates) {
  EXPECT_THROW(Resampler(0, 16000), Error);
  EXPECT_THROW(Resampler(44100, -1), Error);
}

// The same through files: a WAV at each rate comes out at 16 kHz with the right length.
TEST_P(ResampleTo16k, WavFileComesOutAt16k) {
  const int input_rate = GetParam();
  TemporaryDirectory temp;
  const auto path = temp / "tone.wav";
  const auto input_frames = static_cast<std::size_t>(3 * input_rate);
  testing::write_sndfile(path, SF_FORMAT_WAV | SF_FORMAT_FLOAT, input_rate, 1,
                         testing::sine(700.0, input_rate, input_frames, 0.25f));
  MonoResampledStream stream(path);
  ASSERT_TRUE(stream.expected_samples().has_value());
  EXPECT_EQ(*stream.expected_samples(), 48000);
  const auto samples = load_mono_16k(path);
  EXPECT_NEAR(static_cast<double>(samples.size()), 48000.0, 2.0);
  const auto middle = std::span<const float>(samples).subspan(8000, 32000);
  EXPECT_NEAR(testing::tone_amplitude(middle, 700.0, 16000), 0.25, 0.003);
}

}  // namespace
}  // namespace parley::audio
