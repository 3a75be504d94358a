#include "frames/speaker_count.h"

#include <gtest/gtest.h>

#include "core/npz.h"
#include "frames/goldens_test_support.h"
#include "testing/shared_data.h"

namespace parley::frames {
namespace {

using testing::community1_cases;
using testing::read_window_json;

TEST(SpeakerCount, MatchesPyannoteOnSpeakrsFixtures) {
  PARLEY_REQUIRE_SHARED(dir, "goldens/speakrs");
  for (const std::string name : {"pipeline", "3speakers", "single_speaker", "short"}) {
    const NdArray<float> segmentation =
        read_npy(dir / (name + "_segmentation_data.npy")).as<float>();
    const SlidingWindow chunks = read_window_json(dir / (name + "_segmentation_window.json"));
    const SlidingWindow frames = read_window_json(dir / (name + "_speaker_counting_window.json"));
    const NdArray<int> expected = read_npy(dir / (name + "_speaker_counting_data.npy")).as<int>();
    EXPECT_EQ(frames, segmentation3_frames()) << name;

    const SlidingWindowFeature<int> count = speaker_count(segmentation, chunks, frames);
    EXPECT_EQ(count.data.size(), expected.size()) << name;
    EXPECT_EQ(count.data.values(), expected.values()) << name;
    EXPECT_EQ(count.window, frames) << name;
  }
}

TEST(SpeakerCount, MatchesPyannoteOnCommunity1Goldens) {
  PARLEY_REQUIRE_SHARED(root, "goldens/pyannote-community1");
  const auto cases = community1_cases(root);
  ASSERT_FALSE(cases.empty());
  for (const auto& dir : cases) {
    const NpzArchive segmentations = read_npz(dir / "segmentations.npz");
    const NpzArchive reconstruction = read_npz(dir / "reconstruction.npz");
    const NdArray<float> binarized = npz_get(segmentations, "segmentations", dir).as<float>();
    const SlidingWindow chunks(testing::npz_scalar(reconstruction, "chunk_start", dir),
                               testing::npz_scalar(reconstruction, "chunk_duration", dir),
                               testing::npz_scalar(reconstruction, "chunk_step", dir));
    const SlidingWindow frames(testing::npz_scalar(reconstruction, "frame_start", dir),
                               testing::npz_scalar(reconstruction, "frame_duration", dir),
                               testing::npz_scalar(reconstruction, "frame_step", dir));
    EXPECT_EQ(frames, segmentation3_frames());
    const NdArray<int> expected = testing::npz_int(reconstruction, "count", dir);
    const SlidingWindowFeature<int> count = speaker_count(binarized, chunks, frames);
    EXPECT_EQ(count.data.values(), expected.values()) << dir;
  }
}

TEST(SpeakerCount, SilenceCountsZeroAndOneChunkCoversItsFrames) {
  const SlidingWindow chunks(0.0, 10.0, 1.0);
  const NdArray<float> silence({1, 589, 3});
  const auto count = speaker_count(silence, chunks, segmentation3_frames());
  EXPECT_EQ(count.data.size(), 594u);  // closest frame to 10 s + 1
  EXPECT_EQ(max_count(count.data), 0);

  NdArray<float> one_chunk({1, 589, 3});
  for (std::size_t f = 100; f < 200; ++f) one_chunk(0, f, 1) = 1.0f;
  for (std::size_t f = 150; f < 200; ++f) one_chunk(0, f, 2) = 1.0f;
  const auto counted = speaker_count(one_chunk, chunks, segmentation3_frames());
  EXPECT_EQ(counted.data(99), 0);
  EXPECT_EQ(counted.data(100), 1);
  EXPECT_EQ(counted.data(150), 2);
  EXPECT_EQ(counted.data(199), 2);
  EXPECT_EQ(counted.data(200), 0);
  EXPECT_EQ(counted.data(590), 0);  // past the chunk's last frame: missing -> 0
  EXPECT_EQ(max_count(cap_count(counted.data, 1)), 1);
}

TEST(SpeakerCount, AveragesAndRoundsHalfToEven) {
  // two 2-frame chunks overlapping on one frame: (1 + 2) / 2 = 1.5 -> 2 and (1 + 0) / 2 -> 0;
  // the 4th frame (closest to the last chunk's end) is covered by no chunk: 0
  const SlidingWindow chunks(0.0, 2.0, 1.0);
  const SlidingWindow frames(0.0, 1.0, 1.0);
  NdArray<float> active({2, 2, 2}, {1, 0, 1, 0,  //
                                    1, 1, 0, 0});
  const auto count = speaker_count(active, chunks, frames);
  EXPECT_EQ(count.data.values(), (std::vector<int>{1, 2, 0, 0}));
  NdArray<float> halves({2, 2, 2}, {1, 0, 1, 0,  //
                                    0, 0, 0, 0});
  EXPECT_EQ(speaker_count(halves, chunks, frames).data.values(), (std::vector<int>{1, 0, 0, 0}));
}

TEST(SpeakerCount, FastModeStepOfTwoSecondsCoversEveryFrame) {
  // 30 s in fast mode: 11 chunks every 2 s, one speaker talking throughout
  const ChunkPlan plan = plan_chunks(480000, 16000, 10.0, 2.0);
  ASSERT_EQ(plan.num_chunks(), 11);
  NdArray<float> binarized({11, 589, 3});
  for (std::size_t c = 0; c < 11; ++c) {
    for (std::size_t f = 0; f < 589; ++f) binarized(c, f, 0) = 1.0f;
  }
  const auto count = speaker_count(binarized, plan.chunks(), segmentation3_frames());
  ASSERT_EQ(count.data.size(), 1779u);  // same frames as 21 chunks every 1 s
  // the last chunk starts at frame rint(20 / 0.016875) = 1185 and covers 589 frames; the
  // 5 frames after it (up to the one closest to 30 s) get no score, as in pyannote
  for (std::size_t f = 0; f < 1774; ++f) ASSERT_EQ(count.data(f), 1) << f;
  for (std::size_t f = 1774; f < 1779; ++f) EXPECT_EQ(count.data(f), 0) << f;
}

TEST(SpeakerCount, WarmUpTrimsChunksAndShiftsFrames) {
  const SlidingWindow chunks(0.0, 10.0, 1.0);
  NdArray<float> binarized({2, 10, 1}, 1.0f);
  const auto count = speaker_count(binarized, chunks, SlidingWindow(0.0, 1.0, 1.0), {0.1, 0.1});
  EXPECT_DOUBLE_EQ(count.window.start(), 1.0);
  EXPECT_EQ(count.data.size(), 10u);  // 8-frame chunks at 1 s and 2 s, + the frame at the end
  EXPECT_EQ(count.data(8), 1);
  EXPECT_EQ(count.data(9), 0);
  EXPECT_EQ(max_count(count.data), 1);
}

}  // namespace
}  // namespace parley::frames
