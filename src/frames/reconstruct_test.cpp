#include "frames/reconstruct.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "cluster/inactive_speakers.h"
#include "core/error.h"
#include "core/npz.h"
#include "frames/aggregation.h"
#include "frames/goldens_test_support.h"
#include "frames/speaker_count.h"
#include "testing/shared_data.h"

namespace parley::frames {
namespace {

TEST(Reconstruct, MatchesPyannoteOnCommunity1Goldens) {
  PARLEY_REQUIRE_SHARED(root, "goldens/pyannote-community1");
  const auto cases = testing::community1_cases(root);
  ASSERT_FALSE(cases.empty());
  for (const auto& dir : cases) {
    const NpzArchive reconstruction = read_npz(dir / "reconstruction.npz");
    const NdArray<float> binarized =
        npz_get(read_npz(dir / "segmentations.npz"), "segmentations", dir).as<float>();
    const NdArray<int> hard_clusters =
        testing::npz_int(read_npz(dir / "clustering.npz"), "hard_clusters", dir);
    const NdArray<float> expected = testing::npz_float(reconstruction, "discrete_diarization", dir);
    const SlidingWindow chunks(0.0, 10.0, 1.0);
    const auto count = speaker_count(binarized, chunks, segmentation3_frames());

    const NdArray<int> masked = cluster::mask_inactive_speakers(binarized, hard_clusters);
    const auto discrete = reconstruct(binarized, chunks, masked, count);
    EXPECT_EQ(discrete.data.shape(), expected.shape()) << dir;
    EXPECT_EQ(discrete.data.values(), expected.values()) << dir;
    EXPECT_EQ(discrete.window, segmentation3_frames());
  }
}

TEST(Reconstruct, MatchesPyannoteOnSpeakrsPipelineFixture) {
  PARLEY_REQUIRE_SHARED(dir, "goldens/speakrs");
  const NdArray<float> binarized = read_npy(dir / "pipeline_segmentation_data.npy").as<float>();
  const NdArray<int> hard_clusters = read_npy(dir / "pipeline_hard_clusters.npy").as<int>();
  const NdArray<int> counts = read_npy(dir / "pipeline_speaker_counting_data.npy").as<int>();
  const NdArray<float> expected =
      read_npy(dir / "pipeline_discrete_diarization_data.npy").as<float>();
  const SlidingWindow chunks = testing::read_window_json(dir / "pipeline_segmentation_window.json");
  const SlidingWindow frames =
      testing::read_window_json(dir / "pipeline_discrete_diarization_window.json");
  const SlidingWindowFeature<int> count{NdArray<int>({counts.size()}, counts.values()), frames};
  const auto discrete = reconstruct(
      binarized, chunks, cluster::mask_inactive_speakers(binarized, hard_clusters), count);
  EXPECT_EQ(discrete.data.shape(), expected.shape());
  EXPECT_EQ(discrete.data.values(), expected.values());
}

TEST(Reconstruct, ClusteredActivationsTakeTheMaxOverLocalSpeakers) {
  NdArray<float> seg({1, 3, 3}, {1, 0, 0,  //
                                 0, 1, 0,  //
                                 0, 0, 0});
  NdArray<int> clusters({1, 3}, {1, 1, -2});
  const SlidingWindow chunks(0.0, 3.0, 1.0);
  const SlidingWindow frames(0.0, 1.0, 1.0);
  const auto activations = clustered_activations(seg, chunks, clusters, frames);
  ASSERT_EQ(activations.data.shape(), (std::vector<std::size_t>{4, 2}));
  EXPECT_EQ(activations.data.values(), (std::vector<float>{0, 1,  // cluster 0 absent: 0
                                                           0, 1,  //
                                                           0, 0,  //
                                                           0, 0}));
  EXPECT_THROW(clustered_activations(seg, chunks, NdArray<int>({1, 3}, {0, -1, 0}), frames), Error);
}

// clustered_activations against its definition: every chunk's clustered segmentation held in
// one [chunks, frames, clusters] array (NaN where the chunk lacks the cluster), then aggregated.
TEST(Reconstruct, ClusteredActivationsEqualTheAggregatedClusteredSegmentations) {
  std::mt19937 random(11);
  const SlidingWindow chunks(0.0, 10.0, 1.0);
  for (int trial = 0; trial < 20; ++trial) {
    const std::size_t num_chunks = 1 + random() % 30;
    const std::size_t speakers = 1 + random() % 4;
    const std::size_t clusters = 1 + random() % 6;
    NdArray<float> seg({num_chunks, 589, speakers});
    for (float& value : seg.values()) value = static_cast<float>(random() % 2);
    NdArray<int> hard({num_chunks, speakers});
    for (int& cluster : hard.values()) {
      cluster = static_cast<int>(random() % (clusters + 1)) - 1;
      if (cluster < 0) cluster = cluster::kInactiveSpeaker;
    }
    int largest = -1;
    for (const int cluster : hard.values()) largest = std::max(largest, cluster);
    const auto num_clusters = static_cast<std::size_t>(largest + 1);
    NdArray<double> clustered({num_chunks, 589, num_clusters},
                              std::numeric_limits<double>::quiet_NaN());
    for (std::size_t c = 0; c < num_chunks; ++c) {
      for (std::size_t s = 0; s < speakers; ++s) {
        if (hard(c, s) < 0) continue;
        for (std::size_t f = 0; f < 589; ++f) {
          double& slot = clustered(c, f, static_cast<std::size_t>(hard(c, s)));
          slot = std::isnan(slot) ? seg(c, f, s) : std::max<double>(slot, seg(c, f, s));
        }
      }
    }
    AggregateOptions options;
    options.missing = 0.0f;
    options.skip_average = true;
    const auto expected = aggregate(clustered, chunks, segmentation3_frames(), options);
    const auto actual = clustered_activations(seg, chunks, hard, segmentation3_frames());
    EXPECT_EQ(actual.data.shape(), expected.data.shape());
    EXPECT_EQ(actual.data.values(), expected.data.values());
    EXPECT_EQ(actual.window, expected.window);
  }
}

// Toy axes: 2-frame chunks of 2 s every 1 s, 1 s frames.
const SlidingWindow kChunks(0.0, 2.0, 1.0);
const SlidingWindow kFrames(0.0, 1.0, 1.0);

TEST(Reconstruct, KeepsTheCountMostActiveSpeakersWithTiesToTheLowerIndex) {
  // frame 1 is seen by both chunks: cluster 1 active in both (2), cluster 0 in one (1)
  NdArray<float> seg({2, 2, 2}, {1, 1, 1, 1,  //
                                 0, 1, 1, 1});
  NdArray<int> clusters({2, 2}, {0, 1, 0, 1});
  SlidingWindowFeature<int> count{NdArray<int>({4}, {1, 1, 2, 0}), kFrames};
  const auto discrete = reconstruct(seg, kChunks, clusters, count);
  ASSERT_EQ(discrete.data.shape(), (std::vector<std::size_t>{4, 2}));
  // frame 0: tie 1-1 -> cluster 0; frame 1: cluster 1 (2 > 1); frame 2: both; frame 3: none
  EXPECT_EQ(discrete.data.values(), (std::vector<float>{1, 0, 0, 1, 1, 1, 0, 0}));
}

TEST(Reconstruct, PadsSpeakersWhenTheCountExceedsTheClusters) {
  NdArray<float> seg({1, 2, 1}, {1, 1});
  NdArray<int> clusters({1, 1}, std::vector<int>{0});
  SlidingWindowFeature<int> count{NdArray<int>({3}, {2, 1, 0}), kFrames};
  const auto discrete = reconstruct(seg, SlidingWindow(0.0, 2.0, 1.0), clusters, count);
  ASSERT_EQ(discrete.data.shape(), (std::vector<std::size_t>{3, 2}));
  EXPECT_EQ(discrete.data.values(), (std::vector<float>{1, 1, 1, 0, 0, 0}));
}

TEST(Reconstruct, SilenceGivesNoSpeakers) {
  const NdArray<float> seg({1, 589, 3});
  const SlidingWindow chunks(0.0, 10.0, 1.0);
  const auto count = speaker_count(seg, chunks, segmentation3_frames());
  const NdArray<int> masked = cluster::mask_inactive_speakers(seg, NdArray<int>({1, 3}, 0));
  const auto discrete = reconstruct(seg, chunks, masked, count);
  EXPECT_EQ(discrete.data.shape(), (std::vector<std::size_t>{594, 0}));
}

}  // namespace
}  // namespace parley::frames
