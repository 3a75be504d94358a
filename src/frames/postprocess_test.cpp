#include "frames/postprocess.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/npz.h"
#include "eval/rttm.h"
#include "frames/goldens_test_support.h"
#include "frames/speaker_count.h"
#include "testing/shared_data.h"

namespace parley::frames {
namespace {

TEST(Postprocess, ReproducesCommunity1FromClustersToRttm) {
  PARLEY_REQUIRE_SHARED(root, "goldens/pyannote-community1");
  const auto cases = testing::community1_cases(root);
  ASSERT_FALSE(cases.empty());
  for (const auto& dir : cases) {
    const NdArray<float> binarized =
        npz_get(read_npz(dir / "segmentations.npz"), "segmentations", dir).as<float>();
    const NdArray<int> hard_clusters =
        testing::npz_int(read_npz(dir / "clustering.npz"), "hard_clusters", dir);
    const NdArray<float> expected =
        testing::npz_float(read_npz(dir / "reconstruction.npz"), "discrete_diarization", dir);
    const ChunkPlan plan =
        plan_chunks(static_cast<std::int64_t>(binarized.dim(0) - 1) * 16000 + 160000, 16000);
    ASSERT_EQ(plan.num_chunks(), static_cast<std::int64_t>(binarized.dim(0)));
    const auto count = speaker_count(binarized, plan.chunks(), segmentation3_frames());
    const FrameDiarization result = diarize_frames(binarized, plan.chunks(), hard_clusters, count);

    EXPECT_EQ(result.discrete.data.values(), expected.values()) << dir;
    EXPECT_EQ(eval::format_rttm(to_eval_turns(result.turns, "clip_16k")),
              testing::read_text(dir / "reference.rttm"))
        << dir;

    // exclusive: exactly one speaker where anyone speaks, and only speakers of the turns
    // (it lacks the padding columns the full diarization gets when count > clusters)
    const NdArray<float>& exclusive = result.exclusive_discrete.data;
    ASSERT_EQ(exclusive.dim(0), expected.dim(0));
    ASSERT_LE(exclusive.dim(1), expected.dim(1));
    for (std::size_t t = 0; t < exclusive.dim(0); ++t) {
      float speakers = 0.0f;
      for (std::size_t k = 0; k < exclusive.dim(1); ++k) {
        speakers += exclusive(t, k);
        if (exclusive(t, k) == 1.0f) {
          ASSERT_EQ(expected(t, k), 1.0f) << dir << " frame " << t;
        }
      }
      ASSERT_EQ(speakers, result.count.data(t) > 0 ? 1.0f : 0.0f) << dir << " frame " << t;
    }
    for (std::size_t i = 1; i < result.exclusive_turns.size(); ++i) {
      EXPECT_LE(result.exclusive_turns[i - 1].end, result.exclusive_turns[i].start + 1e-9) << dir;
    }
    EXPECT_FALSE(result.exclusive_turns.empty());
    EXPECT_EQ(result.speaker_order.size(), expected.dim(1));
  }
}

TEST(Postprocess, CapsTheCountAtMaxSpeakers) {
  PARLEY_REQUIRE_SHARED(dir, "goldens/pyannote-community1/02_pyannote_sample");
  const NdArray<float> binarized =
      npz_get(read_npz(dir / "segmentations.npz"), "segmentations", dir).as<float>();
  const NdArray<int> hard_clusters =
      testing::npz_int(read_npz(dir / "clustering.npz"), "hard_clusters", dir);
  const SlidingWindow chunks(0.0, 10.0, 1.0);
  const auto count = speaker_count(binarized, chunks, segmentation3_frames());
  ASSERT_EQ(max_count(count.data), 2);
  PostprocessOptions options;
  options.max_speakers = 1;
  const FrameDiarization capped = diarize_frames(binarized, chunks, hard_clusters, count, options);
  EXPECT_EQ(max_count(capped.count.data), 1);
  EXPECT_EQ(capped.discrete.data.values(), capped.exclusive_discrete.data.values());
  options.max_speakers = 0;
  EXPECT_THROW(diarize_frames(binarized, chunks, hard_clusters, count, options), Error);
}

TEST(Postprocess, SilenceAndSingleChunkEdgeCases) {
  // a 3 s recording: one zero-padded chunk
  const ChunkPlan plan = plan_chunks(48000, 16000);
  ASSERT_EQ(plan.num_chunks(), 1);
  NdArray<float> binarized({1, 589, 3});
  const auto silent_count = speaker_count(binarized, plan.chunks(), segmentation3_frames());
  EXPECT_EQ(max_count(silent_count.data), 0);
  const FrameDiarization silent =
      diarize_frames(binarized, plan.chunks(), NdArray<int>({1, 3}, 0), silent_count);
  EXPECT_TRUE(silent.turns.empty());
  EXPECT_TRUE(silent.exclusive_turns.empty());
  EXPECT_TRUE(silent.speaker_order.empty());

  // one speaker from 1 s to 2 s, another (cluster 0) overlapping from 1.5 s to 2.5 s
  for (std::size_t f = 59; f < 118; ++f) binarized(0, f, 0) = 1.0f;
  for (std::size_t f = 89; f < 148; ++f) binarized(0, f, 2) = 1.0f;
  const auto count = speaker_count(binarized, plan.chunks(), segmentation3_frames());
  const FrameDiarization result =
      diarize_frames(binarized, plan.chunks(), NdArray<int>({1, 3}, {1, 0, 0}), count);
  ASSERT_EQ(result.turns.size(), 2u);
  EXPECT_EQ(result.speaker_order, (std::vector<int>{0, 1}));
  EXPECT_EQ(result.turns[0].speaker, "SPEAKER_01");  // cluster 1 speaks first
  EXPECT_NEAR(result.turns[0].start, 59 * 0.016875 + 0.03096875, 1e-9);
  EXPECT_NEAR(result.turns[0].end, 118 * 0.016875 + 0.03096875, 1e-9);
  EXPECT_EQ(result.turns[1].speaker, "SPEAKER_00");
  EXPECT_NEAR(result.turns[1].start, 89 * 0.016875 + 0.03096875, 1e-9);
  // exclusive: ties between the two go to cluster 0 (lower index) during the overlap
  ASSERT_EQ(result.exclusive_turns.size(), 2u);
  EXPECT_EQ(result.exclusive_turns[0].speaker, "SPEAKER_01");
  EXPECT_NEAR(result.exclusive_turns[0].end, 89 * 0.016875 + 0.03096875, 1e-9);
  EXPECT_EQ(result.exclusive_turns[1].speaker, "SPEAKER_00");
}

}  // namespace
}  // namespace parley::frames
