#include "audio/decoded_audio.h"

#include <gtest/gtest.h>

#include <sndfile.h>

#include <algorithm>

#include "audio/mono_resampled_stream.h"
#include "audio/test_audio_files.h"
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

}  // namespace
}  // namespace parley::audio
