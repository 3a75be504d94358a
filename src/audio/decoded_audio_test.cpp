#include "audio/decoded_audio.h"

#include <gtest/gtest.h>

#include <sndfile.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "audio/audio_files_test_support.h"
#include "audio/audio_source.h"
#include "audio/mono_resampled_stream.h"
#include "audio/resampler.h"
#include "core/error.h"
#include "testing/temporary_directory.h"

namespace parley::audio {
namespace {

TEST(DecodedAudio, ShortRecordingsStayInMemoryLongOnesGoToAMappedFile) {
  const parley::testing::TemporaryDirectory folder("decoded-audio");
  const auto path = folder / "tone.wav";
  const auto left = testing::sine(440.0, 44100.0, 3 * 44100, 0.5f);
  const auto right = testing::sine(660.0, 44100.0, 3 * 44100, 0.25f);
  testing::write_sndfile(path, SF_FORMAT_WAV | SF_FORMAT_FLOAT, 44100, 2,
                         testing::interleave({left, right}));
  const std::vector<float> expected = load_mono_16k(path);
  ASSERT_EQ(expected.size(), 48000u);

  const DecodedAudio in_memory = DecodedAudio::decode(path);
  EXPECT_FALSE(in_memory.spilled());
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), in_memory.samples().begin(),
                         in_memory.samples().end()));

  DecodedAudio spilled = DecodedAudio::decode(path, 1000);
  EXPECT_TRUE(spilled.spilled());
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), spilled.samples().begin(),
                         spilled.samples().end()));
  // Handing pages back never changes what is read.
  spilled.release_before(40000);
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), spilled.samples().begin(),
                         spilled.samples().end()));
  // Moved, the mapping goes along and stays valid.
  const DecodedAudio moved = std::move(spilled);
  EXPECT_TRUE(moved.spilled());
  EXPECT_FALSE(spilled.spilled());
  EXPECT_EQ(moved.samples()[12345], expected[12345]);
}

// The straightforward decode that the fast paths must equal bit for bit: every frame read in one
// go, NaN/Inf replaced one sample at a time, a mono file's samples kept as they are (-0.0 too),
// several channels summed in double from 0.0 and scaled, and the whole signal resampled in one
// call.
std::vector<float> reference_decode(const std::filesystem::path& path) {
  const auto source = open_audio_source(path);
  const auto channels = static_cast<std::size_t>(source->info().channels);
  std::vector<float> interleaved;
  std::vector<float> block(4096 * channels);
  while (const std::size_t frames = source->read(block)) {
    interleaved.insert(interleaved.end(), block.begin(),
                       block.begin() + static_cast<std::ptrdiff_t>(frames * channels));
  }
  for (float& sample : interleaved) {
    if (!std::isfinite(sample)) sample = 0.0f;
  }
  std::vector<float> mono(interleaved.size() / channels);
  if (channels == 1) mono = interleaved;
  for (std::size_t frame = 0; channels > 1 && frame < mono.size(); ++frame) {
    double sum = 0.0;
    for (std::size_t channel = 0; channel < channels; ++channel) {
      sum += interleaved[frame * channels + channel];
    }
    mono[frame] = static_cast<float>(sum) * (1.0f / static_cast<float>(channels));
  }
  if (source->info().sample_rate == 16000) return mono;
  Resampler resampler(source->info().sample_rate, 16000);
  std::vector<float> resampled;
  resampler.process(mono, resampled);
  resampler.flush(resampled);
  return resampled;
}

bool same_bits(std::span<const float> left, std::span<const float> right) {
  return left.size() == right.size() &&
         std::memcmp(left.data(), right.data(), left.size_bytes()) == 0;
}

// Signed zeros in every channel (two -0.0 average to +0.0), NaN and Inf, full scale.
std::vector<float> awkward_channel(std::size_t frames, std::size_t channel) {
  auto samples = testing::sine(300.0 + 170.0 * static_cast<double>(channel), 16000.0, frames, 0.4f,
                               0.3 * static_cast<double>(channel));
  for (std::size_t index = 0; index < frames; index += 97) samples[index] = -0.0f;
  for (std::size_t index = 50; index < frames; index += 5003) samples[index] = 1.0f;
  return samples;
}

// A background decode may be dropped or moved while it runs: dropped, it stops (and frees what
// it decoded into); moved, it goes on filling the same samples.
// A long recording's samples go to $TMPDIR: one naming a missing folder is reported with what
// to do (it was "filesystem error: temp_directory_path"), by both ways of decoding.
TEST(DecodedAudio, AMissingTmpdirSaysWhatToDo) {
  const parley::testing::TemporaryDirectory folder("decoded-audio");
  const auto path = folder / "tone.wav";
  testing::write_sndfile(path, SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, 1,
                         testing::sine(440.0, 16000.0, 16000, 0.5f));
  const std::string missing = (folder / "no-such-tmp").string();
  const char* old = std::getenv("TMPDIR");
  const std::string saved = old != nullptr ? old : "";
  ::setenv("TMPDIR", missing.c_str(), 1);
  std::vector<std::string> messages;
  for (const bool background : {false, true}) {
    try {
      const DecodedAudio audio = background ? DecodedAudio::decode_in_background(path, 1000)
                                            : DecodedAudio::decode(path, 1000);
      audio.wait();
      messages.push_back("");
    } catch (const Error& error) {
      messages.push_back(error.what());
    }
  }
  if (old != nullptr) {
    ::setenv("TMPDIR", saved.c_str(), 1);
  } else {
    ::unsetenv("TMPDIR");
  }
  for (const std::string& message : messages) {
    EXPECT_NE(message.find("TMPDIR is set to '" + missing + "'"), std::string::npos) << message;
  }
}

TEST(DecodedAudio, BackgroundDecodeMayBeDroppedOrMovedWhileItRuns) {
  const parley::testing::TemporaryDirectory folder("decoded-audio-background");
  const auto path = folder / "five-minutes.wav";
  constexpr std::size_t kFrames = 300 * 44100;
  testing::write_sndfile(path, SF_FORMAT_WAV | SF_FORMAT_PCM_16, 44100, 2,
                         testing::interleave({testing::sine(440.0, 44100.0, kFrames, 0.5f),
                                              testing::sine(660.0, 44100.0, kFrames, 0.25f)}));
  for (const std::size_t spill : {std::size_t{0}, std::size_t{1000}}) {
    {
      const DecodedAudio dropped = DecodedAudio::decode_in_background(path, spill);
      EXPECT_EQ(dropped.samples().size(), 300u * 16000u);
    }
    DecodedAudio moved;
    {
      DecodedAudio started = DecodedAudio::decode_in_background(path, spill);
      moved = std::move(started);
    }
    moved.wait();
    EXPECT_TRUE(same_bits(moved.samples(), load_mono_16k(path))) << "spill past " << spill;
    EXPECT_GT(moved.decode_seconds(), 0.0);
  }
}

// Each decode of a file with NaN/Inf warns once; dozens of decodes would bury a failure.
class QuietLog {
 public:
  QuietLog() { spdlog::set_default_logger(std::make_shared<spdlog::logger>("quiet")); }
  ~QuietLog() { spdlog::set_default_logger(previous_); }
  QuietLog(const QuietLog&) = delete;
  QuietLog& operator=(const QuietLog&) = delete;

 private:
  std::shared_ptr<spdlog::logger> previous_ = spdlog::default_logger();
};

struct EquivalenceCase {
  std::string file_name;
  int sndfile_format = 0;  // 0: AAC in MP4, written with libav
  int sample_rate = 16000;
  std::size_t channels = 1;
  bool nonfinite = false;
};

// Every path through MonoResampledStream and DecodedAudio (straight into the caller's buffer or
// through a block, in memory, sent to the file midway or from the start, header length known
// or not) gives the reference's samples, bit for bit.
TEST(DecodedAudio, EveryPathEqualsTheStraightforwardDecode) {
  const parley::testing::TemporaryDirectory folder("decoded-audio-paths");
  const QuietLog quiet;
  const EquivalenceCase cases[] = {
      {"mono16.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, 1, false},
      {"monofloat.wav", SF_FORMAT_WAV | SF_FORMAT_FLOAT, 16000, 1, true},
      {"stereofloat.wav", SF_FORMAT_WAV | SF_FORMAT_FLOAT, 16000, 2, true},
      {"three.flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_24, 16000, 3, false},
      {"four.wav", SF_FORMAT_WAV | SF_FORMAT_FLOAT, 16000, 4, true},
      {"six48k.wav", SF_FORMAT_WAV | SF_FORMAT_FLOAT, 48000, 6, true},
      {"seven.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, 7, false},
      {"stereo44k.flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 44100, 2, false},
      {"mono22k.mp3", SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III, 22050, 1, false},
      {"stereo.m4a", 0, 16000, 2, false},
  };
  for (const EquivalenceCase& format : cases) {
    SCOPED_TRACE(format.file_name);
    const auto path = folder / format.file_name;
    const std::size_t frames = static_cast<std::size_t>(format.sample_rate) * 7 + 123;
    std::vector<std::vector<float>> channels;
    for (std::size_t channel = 0; channel < format.channels; ++channel) {
      channels.push_back(awkward_channel(frames, channel));
      if (format.nonfinite) {
        channels.back()[1000 + channel] = std::numeric_limits<float>::quiet_NaN();
        channels.back()[70000 + channel] = -std::numeric_limits<float>::infinity();
      }
    }
    const auto interleaved = testing::interleave(channels);
    if (format.sndfile_format != 0) {
      testing::write_sndfile(path, format.sndfile_format, format.sample_rate,
                             static_cast<int>(format.channels), interleaved);
    } else {
      testing::write_with_libav(path, "mp4", "aac", format.sample_rate,
                                static_cast<int>(format.channels), interleaved);
    }
    const std::vector<float> expected = reference_decode(path);
    ASSERT_GT(expected.size(), 100000u);

    EXPECT_TRUE(same_bits(load_mono_16k(path), expected));
    for (const std::size_t block : {1u, 777u, 8192u, 8193u, 65536u, 1u << 20}) {
      EXPECT_TRUE(same_bits(testing::read_all(path, block), expected)) << "blocks of " << block;
    }
    for (const std::size_t spill : {std::size_t{0}, DecodedAudio::kDefaultSpillSamples,
                                    std::size_t{1000}, expected.size() - 1, expected.size()}) {
      const DecodedAudio decoded = DecodedAudio::decode(path, spill);
      EXPECT_TRUE(same_bits(decoded.samples(), expected)) << "spill past " << spill;
      EXPECT_EQ(decoded.spilled(), spill > 0 && spill < expected.size()) << "spill past " << spill;

      const DecodedAudio background = DecodedAudio::decode_in_background(path, spill);
      ASSERT_EQ(background.samples().size(), expected.size());
      const std::size_t half = expected.size() / 2;
      background.wait_for(half);
      EXPECT_TRUE(same_bits(background.samples().first(half), std::span(expected).first(half)))
          << "spill past " << spill;
      background.wait();
      EXPECT_TRUE(background.as_announced());
      EXPECT_TRUE(same_bits(background.samples(), expected)) << "spill past " << spill;
      EXPECT_EQ(background.spilled(), decoded.spilled()) << "spill past " << spill;
    }
  }
}

}  // namespace
}  // namespace parley::audio
