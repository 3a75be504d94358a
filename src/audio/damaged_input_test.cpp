// Files of every supported format, cut short or with bytes overwritten, either decode or fail
// with parley::Error naming the file: never a crash, a hang or another exception type.
#include <sndfile.h>

#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "audio/decoded_audio.h"
#include "audio/mono_resampled_stream.h"
#include "audio/test_audio_files.h"
#include "core/error.h"
#include "testing/temporary_directory.h"

namespace parley::audio {
namespace {

using parley::testing::TemporaryDirectory;

struct Written {
  std::string name;
  std::filesystem::path path;
};

std::vector<Written> write_every_format(const TemporaryDirectory& temp) {
  const auto tone = testing::interleave(
      {testing::sine(440, 16000, 16000, 0.5f), testing::sine(660, 16000, 16000, 0.3f)});
  const std::vector<std::pair<std::string, int>> sndfile_formats = {
      {"pcm16.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16},
      {"float.wav", SF_FORMAT_WAV | SF_FORMAT_FLOAT},
      {"ext.wav", SF_FORMAT_WAVEX | SF_FORMAT_PCM_24},
      {"ulaw.wav", SF_FORMAT_WAV | SF_FORMAT_ULAW},
      {"a.flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_16},
      {"a.ogg", SF_FORMAT_OGG | SF_FORMAT_VORBIS},
      {"a.mp3", SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III},
  };
  std::vector<Written> files;
  for (const auto& [name, format] : sndfile_formats) {
    files.push_back({name, temp / name});
    testing::write_sndfile(files.back().path, format, 16000, 2, tone);
  }
  files.push_back({"a.m4a", temp / "a.m4a"});
  testing::write_with_libav(files.back().path, "ipod", "aac", 16000, 2, tone);
  files.push_back({"a.aac", temp / "a.aac"});
  testing::write_with_libav(files.back().path, "adts", "aac", 16000, 2, tone);
  const auto tone48 = testing::interleave(
      {testing::sine(440, 48000, 48000, 0.5f), testing::sine(660, 48000, 48000, 0.3f)});
  files.push_back({"a.webm", temp / "a.webm"});
  testing::write_with_libav(files.back().path, "webm", "libopus", 48000, 2, tone48);
  return files;
}

// What one way of decoding made of a file: its samples, or its error's message.
struct Outcome {
  std::vector<float> samples;
  std::string error;
  bool operator==(const Outcome&) const = default;
};

template <typename Decode>
Outcome outcome_of(const Decode& decode) {
  try {
    return {decode(), ""};
  } catch (const Error& error) {
    return {{}, error.what()};
  }
}

std::vector<float> copy_of(const DecodedAudio& audio) {
  audio.wait();
  return {audio.samples().begin(), audio.samples().end()};
}

// Decodes `path` fully; true when it decoded, false when it failed with a message naming it.
// Every way of decoding it (whole, into a file, in the background) ends the same way.
bool decodes_or_fails_cleanly(const std::filesystem::path& path, const std::string& label) {
  const Outcome loaded = outcome_of([&] { return load_mono_16k(path); });
  EXPECT_EQ(outcome_of([&] { return copy_of(DecodedAudio::decode(path, 0)); }), loaded) << label;
  EXPECT_EQ(outcome_of([&] { return copy_of(DecodedAudio::decode(path, 1000)); }), loaded) << label;
  EXPECT_EQ(outcome_of([&] { return copy_of(DecodedAudio::decode_in_background(path, 1000)); }),
            loaded)
      << label;
  if (loaded.error.empty()) {
    // Damage may leave plausible audio, but never more than a bounded amount of it.
    EXPECT_LT(loaded.samples.size(), 16000u * 60u) << label;
    return true;
  }
  EXPECT_TRUE(loaded.error.starts_with(path.string() + ": ")) << label << ": " << loaded.error;
  EXPECT_EQ(loaded.error.find('\n'), std::string::npos) << label << ": " << loaded.error;
  return false;
}

TEST(DamagedAudioInput, TruncatedFilesNeverCrash) {
  TemporaryDirectory temp;
  for (const auto& file : write_every_format(temp)) {
    const auto bytes = testing::read_bytes(file.path);
    const auto damaged = temp / ("cut-" + file.name);
    for (const double fraction : {0.01, 0.05, 0.2, 0.5, 0.9, 0.99}) {
      const auto keep = std::max<std::size_t>(
          1, static_cast<std::size_t>(fraction * static_cast<double>(bytes.size())));
      testing::write_bytes(damaged, std::span(bytes).first(keep));
      decodes_or_fails_cleanly(damaged, file.name + " cut to " + std::to_string(keep) + " bytes");
    }
  }
}

TEST(DamagedAudioInput, OverwrittenBytesNeverCrash) {
  TemporaryDirectory temp;
  std::mt19937 random(2024);
  for (const auto& file : write_every_format(temp)) {
    const auto bytes = testing::read_bytes(file.path);
    const auto damaged = temp / ("noisy-" + file.name);
    for (int trial = 0; trial < 12; ++trial) {
      auto copy = bytes;
      // Early trials hit the header region, later ones anywhere.
      const std::size_t span = trial < 6 ? std::min<std::size_t>(copy.size(), 256) : copy.size();
      for (int hit = 0; hit < 8; ++hit) {
        copy[random() % span] = static_cast<std::uint8_t>(random());
      }
      testing::write_bytes(damaged, copy);
      decodes_or_fails_cleanly(damaged, file.name + " trial " + std::to_string(trial));
    }
  }
}

TEST(DamagedAudioInput, ImplausibleSampleRateIsRefused) {
  TemporaryDirectory temp;
  const auto path = temp / "rate1.wav";
  testing::write_sndfile(path, SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, 1,
                         testing::sine(100, 16000, 1600, 0.5f));
  auto bytes = testing::read_bytes(path);
  bytes[24] = 1;  // sample rate 1 Hz: 1600 samples would become 25.6 million at 16 kHz
  std::fill(bytes.begin() + 25, bytes.begin() + 28, 0);
  testing::write_bytes(path, bytes);
  try {
    load_mono_16k(path);
    FAIL() << "a 1 Hz file decoded";
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()),
              path.string() +
                  ": the WAV (Microsoft) header declares a sample rate of 1 Hz, outside the "
                  "1000-768000 Hz that parley reads; the file is damaged or not a recording");
  }
}

}  // namespace
}  // namespace parley::audio
