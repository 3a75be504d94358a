#include "audio/audio_range.h"

#include <sndfile.h>

#include <cmath>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "audio/audio_files_test_support.h"
#include "testing/temporary_directory.h"

namespace parley::audio {
namespace {

using parley::testing::TemporaryDirectory;

void expect_contains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' not in '" << text << "'";
}

// Two seconds at 16 kHz (no resampling), each sample telling its own index, so a cut that is one
// sample off shows.
class AudioRange : public ::testing::Test {
 protected:
  void SetUp() override {
    for (std::size_t index = 0; index < samples_.size(); ++index) {
      samples_[index] = static_cast<float>(index % 1000) / 2000.0f - 0.25f;
    }
    testing::write_sndfile(path_, SF_FORMAT_WAV | SF_FORMAT_FLOAT, 16000, 1, samples_);
  }

  void expect_cut(double start, std::optional<double> end, std::size_t first, std::size_t count) {
    const std::vector<float> cut = decode_range(path_, start, end);
    ASSERT_EQ(cut.size(), count);
    for (std::size_t index = 0; index < count; ++index) {
      ASSERT_EQ(cut[index], samples_[first + index]) << "sample " << index;
    }
  }

  // The message of the Error that decode_range throws for this range.
  std::string refusal(double start, std::optional<double> end, const std::filesystem::path& path) {
    try {
      decode_range(path, start, end);
    } catch (const Error& error) {
      return error.what();
    }
    ADD_FAILURE() << "no error for the range " << start << " - " << end.value_or(-1.0);
    return {};
  }

  TemporaryDirectory temp_;
  std::filesystem::path path_ = temp_ / "two_seconds.wav";
  std::vector<float> samples_ = std::vector<float>(32000);
};

TEST_F(AudioRange, CutsExactlyTheRange) {
  expect_cut(0.5, 1.0, 8000, 8000);
  expect_cut(0.0, std::nullopt, 0, 32000);
  expect_cut(1.25, std::nullopt, 20000, 12000);
  // An end past the recording stops at its end.
  expect_cut(1.5, 10.0, 24000, 8000);
}

TEST_F(AudioRange, StartAtOrPastTheEndSaysTheLength) {
  for (const double start : {2.0, 3.0}) {
    EXPECT_THROW(decode_range(path_, start, std::nullopt), EmptyRangeError);
    const std::string message = refusal(start, 30.0, path_);
    expect_contains(message, "2.000 s long");
    expect_contains(message, "give a start before 2.000 s");
  }
}

TEST_F(AudioRange, BadRangesAreRefusedBeforeTheFileIsOpened) {
  // A missing file: these errors come from the range, never from decoding.
  const auto missing = temp_ / "missing.wav";
  expect_contains(refusal(1.0, 0.5, missing), "give an end after the start");
  // The empty range [1, 1).
  expect_contains(refusal(1.0, 1.0, missing), "not after its start 1.000 s");
  expect_contains(refusal(-0.5, std::nullopt, missing), "give 0 or more seconds");
  expect_contains(refusal(std::numeric_limits<double>::quiet_NaN(), 1.0, missing),
                  "give 0 or more seconds");
  expect_contains(refusal(0.0, std::numeric_limits<double>::infinity(), missing),
                  "not a time in the recording");
  try {
    decode_range(missing, 1.0, 0.5);
  } catch (const EmptyRangeError&) {
    ADD_FAILURE() << "a malformed range is not an empty one";
  } catch (const Error&) {
  }
  EXPECT_NO_THROW(check_time_range(0.0, std::nullopt));
  EXPECT_NO_THROW(check_time_range(1.0, 1.001));
}

}  // namespace
}  // namespace parley::audio
