// Every kind of bad input gets a one-line parley::Error naming the file, never a crash or hang.
#include <sndfile.h>
#include <sys/stat.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <tuple>

#include <gtest/gtest.h>

#include "audio/audio_files_test_support.h"
#include "audio/mono_resampled_stream.h"
#include "core/error.h"
#include "testing/temporary_directory.h"

namespace parley::audio {
namespace {

using parley::testing::TemporaryDirectory;

// The message of the parley::Error that decoding `path` throws, or "" when it decodes.
std::string decode_error(const std::filesystem::path& path) {
  try {
    load_mono_16k(path);
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

std::string not_audio_message(const std::filesystem::path& path) {
  return path.string() +
         ": not audio that parley can decode (libsndfile: Format not recognised; libav: format "
         "not recognised); check that it is a recording, or convert it to WAV or FLAC";
}

std::filesystem::path write_tone_wav(const TemporaryDirectory& temp, const std::string& name,
                                     int format, double seconds = 1.0) {
  const auto path = temp / name;
  const auto frames = static_cast<std::size_t>(seconds * 16000);
  testing::write_sndfile(path, format, 16000, 1, testing::sine(300, 16000, frames, 0.5f));
  return path;
}

TEST(BadAudioInput, MissingFile) {
  TemporaryDirectory temp;
  const auto path = temp / "absent.wav";
  EXPECT_EQ(decode_error(path), path.string() + ": no such file; check the path");
}

TEST(BadAudioInput, Directory) {
  TemporaryDirectory temp;
  EXPECT_EQ(
      decode_error(temp.path()),
      temp.path().string() + ": is a directory, not an audio file; give the path of a recording");
}

TEST(BadAudioInput, FifoIsRefusedWithoutBlocking) {
  TemporaryDirectory temp;
  const auto path = temp / "pipe.wav";
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  EXPECT_EQ(decode_error(path),
            path.string() +
                ": is not a regular file (a device, FIFO or socket); give the path of a recording");
}

TEST(BadAudioInput, EmptyFile) {
  TemporaryDirectory temp;
  const auto path = temp / "empty.wav";
  testing::write_bytes(path, {});
  EXPECT_EQ(decode_error(path), path.string() + ": the file is empty (0 bytes); it holds no audio");
}

// /proc/self/status was "the file is empty": its size says 0, yet it has content.
TEST(BadAudioInput, ProcFileIsNotCalledEmpty) {
  EXPECT_EQ(decode_error("/proc/self/status"),
            "/proc/self/status: reports a size of 0 bytes but has content (a /proc or /sys "
            "file?); it is not a recording");
}

TEST(BadAudioInput, TruncatedHeader) {
  TemporaryDirectory temp;
  const auto path = write_tone_wav(temp, "cut.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16);
  auto bytes = testing::read_bytes(path);
  for (const std::size_t keep : {4, 11, 30}) {
    testing::write_bytes(path, std::span(bytes).first(keep));
    EXPECT_EQ(decode_error(path),
              fmt::format("{}: truncated WAV header: the file ends after {} bytes, inside the "
                          "header; the file is damaged or was cut short",
                          path.string(), keep));
  }
}

TEST(BadAudioInput, HeaderClaimsMoreDataThanPresent) {
  TemporaryDirectory temp;
  const auto path = write_tone_wav(temp, "short.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16);
  auto bytes = testing::read_bytes(path);
  ASSERT_EQ(bytes.size(), 44u + 32000u);
  testing::write_bytes(path, std::span(bytes).first(44 + 10000));
  EXPECT_EQ(decode_error(path),
            path.string() +
                ": truncated: the WAV header declares 32000 bytes of audio but only 10000 are "
                "present; the file was cut short (to decode what is there, rewrite it with `sox "
                "--ignore-length IN OUT`)");
}

TEST(BadAudioInput, TruncatedAiffAndAu) {
  TemporaryDirectory temp;
  for (const auto& [name, format, header_bytes] :
       {std::tuple{"cut.aiff", SF_FORMAT_AIFF | SF_FORMAT_PCM_16, "AIFF"},
        std::tuple{"cut.au", SF_FORMAT_AU | SF_FORMAT_PCM_16, "AU"}}) {
    const auto path = write_tone_wav(temp, name, format);
    auto bytes = testing::read_bytes(path);
    const std::size_t data_start = bytes.size() - 32000;
    testing::write_bytes(path, std::span(bytes).first(data_start + 5000));
    // AIFF's sound data chunk counts its 8-byte preamble.
    const bool aiff = std::string_view(header_bytes) == "AIFF";
    EXPECT_EQ(decode_error(path),
              fmt::format("{}: truncated: the {} header declares {} bytes of audio but only {} are "
                          "present; the file was cut short (to decode what is there, rewrite it "
                          "with `sox --ignore-length IN OUT`)",
                          path.string(), header_bytes, aiff ? 32008 : 32000, aiff ? 5008 : 5000));
  }
}

TEST(BadAudioInput, TruncatedOgg) {
  TemporaryDirectory temp;
  const auto path = write_tone_wav(temp, "cut.ogg", SF_FORMAT_OGG | SF_FORMAT_VORBIS, 4.0);
  auto bytes = testing::read_bytes(path);
  testing::write_bytes(path, std::span(bytes).first(bytes.size() * 6 / 10));
  EXPECT_EQ(decode_error(path),
            path.string() +
                ": truncated: the Ogg stream has no final page; the file was cut short or is "
                "damaged");
}

TEST(BadAudioInput, TruncatedFlac) {
  TemporaryDirectory temp;
  const auto path = write_tone_wav(temp, "cut.flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 4.0);
  auto bytes = testing::read_bytes(path);
  testing::write_bytes(path, std::span(bytes).first(bytes.size() / 2));
  // libsndfile decodes up to the cut and then loses sync in the partial FLAC frame.
  EXPECT_EQ(decode_error(path),
            path.string() +
                ": cannot decode the audio after frame 24576: flac decoder lost sync (libsndfile); "
                "the file is damaged");
}

// Cut exactly before a FLAC frame, the decoder ends cleanly but short of the header's count.
TEST(BadAudioInput, FlacCutAtFrameBoundary) {
  TemporaryDirectory temp;
  const auto path = write_tone_wav(temp, "short.flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 4.0);
  auto bytes = testing::read_bytes(path);
  // Frame headers start with the sync code 0xFFF8 (fixed block size).
  std::size_t cut = bytes.size() / 2;
  while (cut + 1 < bytes.size() && !(bytes[cut] == 0xFF && bytes[cut + 1] == 0xF8)) ++cut;
  ASSERT_LT(cut + 1, bytes.size());
  testing::write_bytes(path, std::span(bytes).first(cut));
  const std::string error = decode_error(path);
  EXPECT_TRUE(
      error.starts_with(path.string() + ": truncated: the header declares 64000 frames but only "))
      << error;
  EXPECT_TRUE(error.ends_with(" could be decoded; the file was cut short")) << error;
}

TEST(BadAudioInput, NonAudioText) {
  TemporaryDirectory temp;
  const auto path = temp / "notes.wav";
  std::string text;
  for (int line = 0; line < 200; ++line) text += "These are meeting notes, not a recording.\n";
  testing::write_bytes(path,
                       std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
  EXPECT_EQ(decode_error(path), not_audio_message(path));
}

TEST(BadAudioInput, RandomBytes) {
  TemporaryDirectory temp;
  const auto path = temp / "noise.bin";
  std::mt19937 random(7);
  std::vector<std::uint8_t> bytes(100000);
  for (auto& byte : bytes) byte = static_cast<std::uint8_t>(random());
  testing::write_bytes(path, bytes);
  EXPECT_EQ(decode_error(path), not_audio_message(path));
}

// A data chunk that claims less than follows it dropped audio without a word: 0 bytes with 10 s
// following gave an empty RTTM, 1,000 bytes diarized 31 ms of a 10 s file.
TEST(BadAudioInput, AudioBeyondTheDeclaredDataIsNotDropped) {
  TemporaryDirectory temp;
  const auto path = write_tone_wav(temp, "claims-less.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16);
  const auto original = testing::read_bytes(path);
  for (const std::uint32_t claimed : {0u, 1000u}) {
    auto bytes = original;
    for (std::size_t i = 0; i < 4; ++i)
      bytes[40 + i] = static_cast<std::uint8_t>(claimed >> (8 * i));
    testing::write_bytes(path, bytes);
    EXPECT_NE(decode_error(path).find("the file goes on for"), std::string::npos) << claimed;
  }
  // Chunks after the audio (LIST metadata) are fine.
  auto with_list = original;
  for (const char c : std::string_view("LIST\4\0\0\0INFO", 12))
    with_list.push_back(static_cast<std::uint8_t>(c));
  testing::write_bytes(path, with_list);
  EXPECT_EQ(decode_error(path), "");
}

// bits=7 and a block size that disagrees with the channels were decoded as something.
TEST(BadAudioInput, ImpossibleSampleLayoutIsRefused) {
  TemporaryDirectory temp;
  const auto path = write_tone_wav(temp, "layout.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16);
  const auto original = testing::read_bytes(path);
  auto seven_bits = original;
  seven_bits[34] = 7;  // fmt chunk: bits per sample
  testing::write_bytes(path, seven_bits);
  EXPECT_EQ(decode_error(path),
            path.string() +
                ": the WAV header declares 7 bits per sample, which its sample format cannot hold; "
                "the file is damaged (rewrite it with sox or ffmpeg)");
  auto block_align = original;
  block_align[32] = 3;  // fmt chunk: bytes per frame
  testing::write_bytes(path, block_align);
  EXPECT_NE(decode_error(path).find("declares 3 bytes per frame, but 1 channels of 16 bits take 2"),
            std::string::npos);
}

// A chunk size larger than the file was reported as a "truncated WAV header".
TEST(BadAudioInput, AbsurdChunkSizeIsNamed) {
  TemporaryDirectory temp;
  const auto path = write_tone_wav(temp, "absurd.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16);
  auto bytes = testing::read_bytes(path);
  bytes[16] = bytes[17] = bytes[18] = 0x7F;  // fmt chunk's size: 0x007F7F7F
  testing::write_bytes(path, bytes);
  EXPECT_NE(decode_error(path).find("the WAV header's 'fmt ' chunk claims 8355711 bytes, more "
                                    "than the 32044 bytes of the whole file"),
            std::string::npos)
      << decode_error(path);
}

TEST(BadAudioInput, ZeroSampleRate) {
  TemporaryDirectory temp;
  const auto path = write_tone_wav(temp, "rate0.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16);
  auto bytes = testing::read_bytes(path);
  std::fill(bytes.begin() + 24, bytes.begin() + 28, 0);  // fmt chunk: sample rate
  testing::write_bytes(path, bytes);
  EXPECT_EQ(decode_error(path),
            path.string() + ": the WAV header declares a sample rate of 0 Hz; the file is damaged");
}

TEST(BadAudioInput, ZeroChannels) {
  TemporaryDirectory temp;
  const auto path = write_tone_wav(temp, "mono0.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16);
  auto bytes = testing::read_bytes(path);
  std::fill(bytes.begin() + 22, bytes.begin() + 24, 0);  // fmt chunk: channel count
  testing::write_bytes(path, bytes);
  EXPECT_EQ(decode_error(path),
            path.string() + ": the WAV header declares 0 channels; the file is damaged");
}

}  // namespace
}  // namespace parley::audio

namespace parley::audio {
namespace {

// A FLAC whose STREAMINFO claims 2^36 - 1 samples (found by fuzz_audio: the whole claim was
// reserved up front, 358 GB): the header is believed only up to an hour, and what is there is read.
TEST(BadAudioInput, AbsurdFlacLengthIsNotReservedUpFront) {
  TemporaryDirectory temp;
  const auto path = temp.path() / "claims-forever.flac";
  testing::write_sndfile(path, SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 16000, 1,
                         testing::sine(300, 16000, 16000, 0.5f));
  auto bytes = testing::read_bytes(path);
  ASSERT_GT(bytes.size(), 26u);
  ASSERT_EQ(std::string(bytes.begin(), bytes.begin() + 4), "fLaC");
  // STREAMINFO follows the 4-byte block header; its total-samples field is the low 4 bits of
  // byte 13 and bytes 14-17 of the block.
  bytes[8 + 13] |= 0x0f;
  for (std::size_t i = 8 + 14; i < 8 + 18; ++i) bytes[i] = 0xff;
  testing::write_bytes(path, bytes);
  try {
    const std::vector<float> samples = load_mono_16k(path);
    EXPECT_LE(samples.size(), 16000u);
    EXPECT_LT(samples.capacity(), std::size_t{1} << 28);
  } catch (const Error&) {
    // Refusing the file in parley's words is as good; running out of memory is not.
  }
}

}  // namespace
}  // namespace parley::audio
