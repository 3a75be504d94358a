// Every format the module promises to read, written by the test itself, decoded to 16 kHz mono.
#include <sndfile.h>

#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "audio/audio_files_test_support.h"
#include "audio/mono_resampled_stream.h"
#include "testing/temporary_directory.h"

namespace parley::audio {
namespace {

using parley::testing::TemporaryDirectory;

struct FormatCase {
  std::string name;
  std::string file_name;
  int sndfile_format = 0;  // 0: encoded with libav instead
  std::string muxer;
  std::string encoder;
  int sample_rate = 16000;
  std::string expected_backend;
  std::string expected_codec;
  // Largest sample error against the original signal for lossless and companded formats; lossy
  // formats are checked through the tone's amplitude instead.
  double max_sample_error = -1.0;
};

std::ostream& operator<<(std::ostream& stream, const FormatCase& format) {
  return stream << format.name;
}

class AudioFormatTest : public ::testing::TestWithParam<FormatCase> {};

TEST_P(AudioFormatTest, DecodesStereoToneToMono16k) {
  const FormatCase& format = GetParam();
  TemporaryDirectory temp;
  const auto path = temp / format.file_name;
  constexpr double kSeconds = 1.0;
  constexpr double kToneHz = 440.0;
  const auto frames = static_cast<std::size_t>(kSeconds * format.sample_rate);
  // Left carries the tone at 0.6, right at 0.2: the mono mix must hold it at 0.4.
  const auto left = testing::sine(kToneHz, format.sample_rate, frames, 0.6f);
  const auto right = testing::sine(kToneHz, format.sample_rate, frames, 0.2f);
  const auto stereo = testing::interleave({left, right});
  if (format.sndfile_format != 0) {
    testing::write_sndfile(path, format.sndfile_format, format.sample_rate, 2, stereo);
  } else {
    testing::write_with_libav(path, format.muxer, format.encoder, format.sample_rate, 2, stereo);
  }

  MonoResampledStream stream(path);
  EXPECT_EQ(stream.source_info().backend, format.expected_backend);
  EXPECT_EQ(stream.source_info().codec, format.expected_codec);
  EXPECT_EQ(stream.source_info().channels, 2);
  EXPECT_EQ(stream.source_info().sample_rate, format.sample_rate);
  const auto samples = testing::read_all(path, 4096);
  EXPECT_EQ(stream.nonfinite_samples_replaced(), 0);

  // Lossy codecs pad the start and end by up to a few codec frames (raw ADTS AAC, which has no
  // edit list to trim its priming, by 1408 samples at 16 kHz).
  const double length_tolerance = format.max_sample_error >= 0 ? 2 : 0.1 * 16000;
  EXPECT_NEAR(static_cast<double>(samples.size()), kSeconds * 16000, length_tolerance);
  const auto middle = std::span<const float>(samples).subspan(2000, 8000);
  EXPECT_NEAR(testing::tone_amplitude(middle, kToneHz, 16000), 0.4, 0.02);
  if (format.max_sample_error >= 0) {
    const auto expected = testing::sine(kToneHz, 16000, samples.size(), 0.4f);
    double max_error = 0.0;
    for (std::size_t index = 0; index < samples.size(); ++index) {
      max_error =
          std::max(max_error, std::abs(static_cast<double>(samples[index]) - expected[index]));
    }
    EXPECT_LE(max_error, format.max_sample_error);
  }
}

const FormatCase kFormats[] = {
    {"wav_pcm_u8", "a.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_U8, "", "", 16000, "libsndfile",
     "Unsigned 8 bit PCM", 1.0 / 128},
    {"wav_pcm_16", "a.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16, "", "", 16000, "libsndfile",
     "Signed 16 bit PCM", 1.0 / 32768},
    {"wav_pcm_24", "a.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_24, "", "", 16000, "libsndfile",
     "Signed 24 bit PCM", 1e-6},
    {"wav_pcm_32", "a.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_32, "", "", 16000, "libsndfile",
     "Signed 32 bit PCM", 1e-6},
    {"wav_float32", "a.wav", SF_FORMAT_WAV | SF_FORMAT_FLOAT, "", "", 16000, "libsndfile",
     "32 bit float", 1e-6},
    {"wav_float64", "a.wav", SF_FORMAT_WAV | SF_FORMAT_DOUBLE, "", "", 16000, "libsndfile",
     "64 bit float", 1e-6},
    {"wav_extensible", "a.wav", SF_FORMAT_WAVEX | SF_FORMAT_PCM_16, "", "", 16000, "libsndfile",
     "Signed 16 bit PCM", 1.0 / 32768},
    {"wav_mu_law", "a.wav", SF_FORMAT_WAV | SF_FORMAT_ULAW, "", "", 16000, "libsndfile", "U-Law",
     0.02},
    {"wav_a_law", "a.wav", SF_FORMAT_WAV | SF_FORMAT_ALAW, "", "", 16000, "libsndfile", "A-Law",
     0.02},
    {"flac", "a.flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_16, "", "", 16000, "libsndfile",
     "Signed 16 bit PCM", 1.0 / 32768},
    {"aiff_pcm_16", "a.aiff", SF_FORMAT_AIFF | SF_FORMAT_PCM_16, "", "", 16000, "libsndfile",
     "Signed 16 bit PCM", 1.0 / 32768},
    {"caf_pcm_24", "a.caf", SF_FORMAT_CAF | SF_FORMAT_PCM_24, "", "", 16000, "libsndfile",
     "Signed 24 bit PCM", 1e-6},
    {"w64_float32", "a.w64", SF_FORMAT_W64 | SF_FORMAT_FLOAT, "", "", 16000, "libsndfile",
     "32 bit float", 1e-6},
    {"rf64_pcm_16", "a.wav", SF_FORMAT_RF64 | SF_FORMAT_PCM_16, "", "", 16000, "libsndfile",
     "Signed 16 bit PCM", 1.0 / 32768},
    {"ogg_opus", "a.opus", SF_FORMAT_OGG | SF_FORMAT_OPUS, "", "", 48000, "libsndfile", "Opus", -1},
    {"ogg_vorbis", "a.ogg", SF_FORMAT_OGG | SF_FORMAT_VORBIS, "", "", 16000, "libsndfile", "Vorbis",
     -1},
    {"mp3", "a.mp3", SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III, "", "", 16000, "libav",
     "MP3 (MPEG audio layer 3)", -1},
    {"m4a_aac", "a.m4a", 0, "ipod", "aac", 16000, "libav", "AAC (Advanced Audio Coding)", -1},
    {"mp4_aac", "a.mp4", 0, "mp4", "aac", 16000, "libav", "AAC (Advanced Audio Coding)", -1},
    {"adts_aac", "a.aac", 0, "adts", "aac", 16000, "libav", "AAC (Advanced Audio Coding)", -1},
    {"webm_opus", "a.webm", 0, "webm", "libopus", 48000, "libav", "Opus", -1},
};

INSTANTIATE_TEST_SUITE_P(Formats, AudioFormatTest, ::testing::ValuesIn(kFormats),
                         [](const auto& test_info) { return test_info.param.name; });

}  // namespace
}  // namespace parley::audio
