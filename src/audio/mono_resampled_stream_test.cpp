#include "audio/mono_resampled_stream.h"

#include <sndfile.h>

#include <cmath>
#include <limits>

#include <gtest/gtest.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include "audio/audio_files_test_support.h"
#include "audio/downmix.h"
#include "audio/resampler.h"
#include "testing/shared_data.h"
#include "testing/temporary_directory.h"

namespace parley::audio {
namespace {

using parley::testing::TemporaryDirectory;

// A 3-minute stereo 44.1 kHz recording whose channels differ, read in several block sizes, gives
// exactly the samples of the whole-file path, and those equal an independent computation that
// decodes everything at once with libsndfile, downmixes and resamples in one call.
TEST(MonoResampledStream, BlockReadsEqualWholeFileDecode) {
  TemporaryDirectory temp;
  const auto path = temp / "long.wav";
  constexpr int kRate = 44100;
  constexpr std::size_t kFrames = 180 * kRate;
  std::vector<float> left = testing::sine(220.0, kRate, kFrames, 0.3f);
  const std::vector<float> right = testing::sine(3000.0, kRate, kFrames, 0.2f, 1.0);
  // A chirp-like change halfway makes misplaced blocks visible.
  for (std::size_t index = kFrames / 2; index < kFrames; ++index) left[index] *= -0.5f;
  const auto stereo = testing::interleave({left, right});
  testing::write_sndfile(path, SF_FORMAT_WAV | SF_FORMAT_PCM_16, kRate, 2, stereo);

  const auto whole = load_mono_16k(path);
  EXPECT_EQ(whole.size(), 180u * 16000u);
  for (const std::size_t block : {1u, 777u, 16000u, 1u << 20}) {
    EXPECT_EQ(testing::read_all(path, block), whole) << "blocks of " << block;
  }

  SF_INFO info{};
  SNDFILE* file = sf_open(path.c_str(), SFM_READ, &info);
  ASSERT_NE(file, nullptr);
  std::vector<float> decoded(kFrames * 2);
  ASSERT_EQ(sf_readf_float(file, decoded.data(), kFrames), static_cast<sf_count_t>(kFrames));
  sf_close(file);
  std::vector<float> mono(kFrames);
  downmix_to_mono(decoded, 2, mono);
  Resampler resampler(kRate, 16000);
  std::vector<float> reference;
  resampler.process(mono, reference);
  resampler.flush(reference);
  EXPECT_EQ(reference, whole);
}

TEST(MonoResampledStream, ReportsProgress) {
  TemporaryDirectory temp;
  const auto path = temp / "progress.wav";
  testing::write_sndfile(path, SF_FORMAT_WAV | SF_FORMAT_PCM_16, 32000, 1,
                         testing::sine(500.0, 32000, 320000, 0.5f));
  MonoResampledStream stream(path);
  EXPECT_EQ(stream.progress().frames_decoded, 0);
  ASSERT_TRUE(stream.progress().frames_total.has_value());
  EXPECT_EQ(*stream.progress().frames_total, 320000);
  EXPECT_EQ(stream.progress().bytes_total, static_cast<std::int64_t>(44 + 2 * 320000));
  std::vector<float> half(80000);
  ASSERT_EQ(stream.read(half), half.size());
  const DecodeProgress middle = stream.progress();
  // The stream decodes at most one block (8192 frames) ahead of what it has handed out.
  EXPECT_GE(middle.frames_decoded, 160000);
  EXPECT_LE(middle.frames_decoded, 160000 + 8192 * 2);
  EXPECT_NEAR(*middle.fraction(), 0.5, 0.06);
  EXPECT_GT(middle.bytes_consumed, 2 * 160000);
  std::vector<float> rest(200000);
  EXPECT_EQ(stream.read(rest), 80000u);
  EXPECT_EQ(stream.samples_read(), 160000);
  EXPECT_EQ(*stream.progress().fraction(), 1.0);
  EXPECT_EQ(stream.progress().bytes_consumed, static_cast<std::int64_t>(44 + 2 * 320000));
}

TEST(MonoResampledStream, ProgressForLibavSourcesUsesBytes) {
  TemporaryDirectory temp;
  const auto path = temp / "progress.m4a";
  testing::write_with_libav(path, "ipod", "aac", 16000, 1,
                            testing::sine(500.0, 16000, 64000, 0.5f));
  MonoResampledStream stream(path);
  EXPECT_EQ(stream.source_info().backend, "libav");
  ASSERT_TRUE(stream.progress().bytes_total.has_value());
  std::vector<float> block(16000);
  while (stream.read(block) > 0) {
  }
  const DecodeProgress done = stream.progress();
  EXPECT_GE(done.frames_decoded, 64000);
  EXPECT_GT(done.bytes_consumed, 0);
  EXPECT_EQ(*done.fraction(), 1.0);
}

// NaN and Inf samples become 0 (and only those), are counted, and are reported once.
TEST(MonoResampledStream, ReplacesNonFiniteSamplesWithZeroAndWarnsOnce) {
  TemporaryDirectory temp;
  const auto path = temp / "nan.wav";
  auto samples = testing::sine(400.0, 16000, 16000, 0.5f);
  samples[100] = std::numeric_limits<float>::quiet_NaN();
  samples[5000] = std::numeric_limits<float>::infinity();
  samples[9000] = -std::numeric_limits<float>::infinity();
  testing::write_sndfile(path, SF_FORMAT_WAV | SF_FORMAT_FLOAT, 16000, 1, samples);

  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(16);
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("test", sink));
  std::vector<float> output;
  std::int64_t replaced = 0;
  {
    MonoResampledStream stream(path);
    output.resize(20000);
    output.resize(stream.read(output));
    replaced = stream.nonfinite_samples_replaced();
  }
  const auto messages = sink->last_formatted();
  spdlog::set_default_logger(previous);

  EXPECT_EQ(replaced, 3);
  ASSERT_EQ(output.size(), samples.size());
  for (std::size_t index = 0; index < output.size(); ++index) {
    const float expected = std::isfinite(samples[index]) ? samples[index] : 0.0f;
    ASSERT_EQ(output[index], expected) << index;
  }
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_NE(messages[0].find(path.string() + ": replaced 3 NaN/Inf samples with 0"),
            std::string::npos)
      << messages[0];
}

// Silence is valid audio: it decodes to zeros of the right length, with no error or warning.
TEST(MonoResampledStream, SilenceOnlyIsValid) {
  TemporaryDirectory temp;
  const auto path = temp / "silence.wav";
  testing::write_sndfile(path, SF_FORMAT_WAV | SF_FORMAT_PCM_16, 48000, 2,
                         std::vector<float>(2 * 48000 * 2, 0.0f));
  const auto samples = load_mono_16k(path);
  ASSERT_EQ(samples.size(), 32000u);
  for (const float value : samples) ASSERT_EQ(value, 0.0f);
}

TEST(MonoResampledStream, ZeroFrameWavIsEmptyAudio) {
  TemporaryDirectory temp;
  const auto path = temp / "none.wav";
  testing::write_sndfile(path, SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, 1, {});
  EXPECT_TRUE(load_mono_16k(path).empty());
}

TEST(MonoResampledStream, SixteenBitSamplesStayInUnitRange) {
  TemporaryDirectory temp;
  const auto path = temp / "full.wav";
  SF_INFO info{.frames = 0,
               .samplerate = 16000,
               .channels = 1,
               .format = SF_FORMAT_WAV | SF_FORMAT_PCM_16,
               .sections = 0,
               .seekable = 0};
  SNDFILE* file = sf_open(path.c_str(), SFM_WRITE, &info);
  ASSERT_NE(file, nullptr);
  const std::vector<short> values = {-32768, -16384, 0, 16384, 32767};
  ASSERT_EQ(sf_writef_short(file, values.data(), 5), 5);
  sf_close(file);
  // Divided by 32768, not 32767: the fbank stage multiplies by 32768 to get the integers back.
  EXPECT_EQ(load_mono_16k(path),
            (std::vector<float>{-1.0f, -0.5f, 0.0f, 0.5f, 32767.0f / 32768.0f}));
}

TEST(MonoResampledStream, UnicodePath) {
  TemporaryDirectory temp;
  const auto path = temp / "réunion ñ 会议.flac";
  const auto tone = testing::sine(250.0, 16000, 8000, 0.5f);
  testing::write_sndfile(path, SF_FORMAT_FLAC | SF_FORMAT_PCM_24, 16000, 1, tone);
  const auto samples = load_mono_16k(path);
  ASSERT_EQ(samples.size(), tone.size());
  for (std::size_t index = 0; index < tone.size(); ++index)
    ASSERT_NEAR(samples[index], tone[index], 1e-6);
}

// The shared AMI file with a non-ASCII name is 30 s of 16 kHz float32: read unchanged.
TEST(MonoResampledStream, ReadsSharedUnicodeNamedRecording) {
  PARLEY_REQUIRE_SHARED(path, "eval/ami-debug/trñ00.wav");
  MonoResampledStream stream(path);
  EXPECT_EQ(stream.source_info().sample_rate, 16000);
  EXPECT_EQ(stream.source_info().channels, 1);
  const auto samples = load_mono_16k(path);
  SF_INFO info{};
  SNDFILE* file = sf_open(path.c_str(), SFM_READ, &info);
  ASSERT_NE(file, nullptr);
  std::vector<float> direct(static_cast<std::size_t>(info.frames));
  sf_readf_float(file, direct.data(), info.frames);
  sf_close(file);
  EXPECT_NEAR(static_cast<double>(samples.size()), 30.0 * 16000, 2);
  EXPECT_EQ(samples, direct);
}

// Every recording in the shared evaluation sets decodes.
TEST(MonoResampledStream, ReadsEverySharedEvalRecording) {
  PARLEY_REQUIRE_SHARED(eval_dir, "eval");
  int files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(eval_dir)) {
    if (entry.path().extension() != ".wav") continue;
    MonoResampledStream stream(entry.path());
    std::vector<float> block(1 << 16);
    std::int64_t total = 0;
    while (const std::size_t got = stream.read(block)) total += static_cast<std::int64_t>(got);
    EXPECT_GT(total, 16000) << entry.path();
    if (const auto expected = stream.expected_samples()) {
      EXPECT_LE(std::abs(total - *expected), 2) << entry.path();
    }
    EXPECT_EQ(stream.nonfinite_samples_replaced(), 0) << entry.path();
    ++files;
  }
  EXPECT_GE(files, 14);
}

// 100 kB of a 133 s MP3 was diarized as 4.1 s without a word: a file that decodes to far less
// than its header announces is reported.
TEST(MonoResampledStream, WarnsWhenAnMp3IsCutShort) {
  TemporaryDirectory temp;
  const auto path = temp / "cut.mp3";
  testing::write_sndfile(path, SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III, 16000, 1,
                         testing::sine(400.0, 16000, 16000 * 20, 0.5f));
  const auto bytes = testing::read_bytes(path);
  testing::write_bytes(path, std::span(bytes).first(bytes.size() / 4));

  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(16);
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("test", sink));
  const auto samples = load_mono_16k(path);
  const auto messages = sink->last_formatted();
  spdlog::set_default_logger(previous);

  EXPECT_LT(samples.size(), 16000u * 10);
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_NE(messages[0].find(path.string() + ": decoded "), std::string::npos) << messages[0];
  EXPECT_NE(messages[0].find("s of the 20.1 s its header announces"), std::string::npos)
      << messages[0];
}

}  // namespace
}  // namespace parley::audio
