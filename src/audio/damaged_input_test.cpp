// Files of every supported format, cut short or with bytes overwritten, either decode or fail
// with parley::Error naming the file: never a crash, a hang or another exception type.
#include <sndfile.h>

extern "C" {
#include <libavutil/error.h>
}

#include <cerrno>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include "audio/audio_files_test_support.h"
#include "audio/decoded_audio.h"
#include "audio/libav_source.h"
#include "audio/mono_resampled_stream.h"
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

// An ID3v2.3 tag holding one title frame whose text-encoding byte is `encoding` (0-3 are valid).
std::vector<std::uint8_t> id3_tag(std::uint8_t encoding) {
  const std::string title = "meeting";
  const auto frame_size = static_cast<std::uint8_t>(1 + title.size());
  std::vector<std::uint8_t> tag = {'I', 'D', '3', 3, 0, 0, 0, 0, 0, 0};
  const std::vector<std::uint8_t> frame_header = {'T', 'I', 'T', '2', 0, 0, 0, frame_size, 0, 0};
  tag.insert(tag.end(), frame_header.begin(), frame_header.end());
  tag.push_back(encoding);
  tag.insert(tag.end(), title.begin(), title.end());
  tag[9] = static_cast<std::uint8_t>(tag.size() - 10);  // syncsafe size, small enough for one byte
  return tag;
}

// What decoding `path` prints on stderr by itself under -q (spdlog at error level), and the
// message it fails with ("" when it decodes).
std::pair<std::string, std::string> chatter_and_error(const std::filesystem::path& path) {
  const auto level = spdlog::get_level();
  spdlog::set_level(spdlog::level::err);
  ::testing::internal::CaptureStderr();
  std::string error;
  try {
    load_mono_16k(path);
  } catch (const Error& failure) {
    error = failure.what();
  }
  std::string chatter = ::testing::internal::GetCapturedStderr();
  spdlog::set_level(level);
  return {chatter, error};
}

// libav's and libsndfile's own words reached the user: "Operation not permitted (libav)" and
// "Error number -50531338 occurred" for damaged AAC, and libmpg123 printed "Unknown text
// encoding 76, I take no chances, sorry!" on stderr under -q for a damaged MP3 tag.
void expect_silent_and_in_parleys_words(const std::filesystem::path& path,
                                        const std::string& label) {
  const auto [chatter, error] = chatter_and_error(path);
  EXPECT_EQ(chatter, "") << label;
  for (const char* raw : {"Error number", "Operation not permitted", "(libav)",
                          "Invalid data found", "does not exist or is not a regular file"}) {
    EXPECT_EQ(error.find(raw), std::string::npos) << label << ": " << error;
  }
}

TEST(DamagedAudioInput, DecodersAreSilentAndErrorsInParleysWords) {
  TemporaryDirectory temp;
  std::mt19937 random(34);
  for (const auto& file : write_every_format(temp)) {
    const auto bytes = testing::read_bytes(file.path);
    const auto damaged = temp / ("hit-" + file.name);
    for (int trial = 0; trial < 16; ++trial) {
      auto copy = bytes;
      for (int hit = 0; hit < 24; ++hit) {
        copy[random() % copy.size()] = static_cast<std::uint8_t>(random());
      }
      testing::write_bytes(damaged, copy);
      expect_silent_and_in_parleys_words(damaged, file.name + " trial " + std::to_string(trial));
    }
  }
}

TEST(DamagedAudioInput, AnMp3WithABadTagIsSilentAndNamedOnce) {
  TemporaryDirectory temp;
  const auto mp3 = temp / "plain.mp3";
  testing::write_sndfile(mp3, SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III, 16000, 1,
                         testing::sine(300, 16000, 16000, 0.5f));
  std::mt19937 random(76);
  // One MPEG-1 layer III frame header, then noise: libsndfile takes it for MP3 (through
  // libmpg123), libav's demuxer does not.
  std::vector<std::uint8_t> noise = {0xFF, 0xFB, 0x90, 0x64};
  noise.resize(20000);
  for (std::size_t i = 4; i < noise.size(); ++i) noise[i] = static_cast<std::uint8_t>(random());
  // The tag before intact MP3 frames, and before bytes that no demuxer takes for MP3: libav
  // refused the latter, and libsndfile handed it to libmpg123, which printed its complaints.
  for (const auto& [name, body] : {std::pair{std::string("tagged.mp3"), testing::read_bytes(mp3)},
                                   std::pair{std::string("tagged-noise.mp3"), noise},
                                   std::pair{std::string("tagged-noise.bin"), noise}}) {
    auto bytes = id3_tag(76);
    bytes.insert(bytes.end(), body.begin(), body.end());
    const auto path = temp / name;
    testing::write_bytes(path, bytes);
    const auto [chatter, error] = chatter_and_error(path);
    EXPECT_EQ(chatter, "") << name;
    if (name == "tagged.mp3") {
      EXPECT_EQ(error, "") << name;
      continue;
    }
    EXPECT_TRUE(error.starts_with(path.string() +
                                  ": starts like an MP3 (an ID3 tag) but holds no audio that "
                                  "libav can decode: "))
        << error;
    EXPECT_TRUE(
        error.ends_with("; the file is damaged: convert or re-export it (e.g. to WAV or "
                        "FLAC)"))
        << error;
  }
}

TEST(DamagedAudioInput, LibavErrorsAreSaidInWords) {
  for (const int code : {AVERROR_INVALIDDATA, AVERROR(EPERM), -50531338, AVERROR_EOF,
                         AVERROR_PATCHWELCOME, AVERROR_BUG}) {
    const std::string meaning = libav_error_meaning(code);
    EXPECT_FALSE(meaning.empty()) << code;
    EXPECT_EQ(meaning.find("Error number"), std::string::npos) << meaning;
    EXPECT_EQ(meaning.find("Operation not permitted"), std::string::npos) << meaning;
  }
  EXPECT_EQ(libav_error_meaning(AVERROR(EPERM)), "its data is not valid for its format");
  EXPECT_EQ(libav_error_meaning(-50531338),
            "its data is not valid for its format (libav error -50531338)");
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
