#include "cluster/ahc_clustering.h"

#include <gtest/gtest.h>

#include <set>

#include "cluster/clustering.h"
#include "cluster/goldens_test_support.h"
#include "cluster/inactive_speakers.h"
#include "testing/shared_data.h"

namespace parley::cluster {
namespace {

TEST(AhcClusteringConfig, ThresholdAdaptsOnlyToLongRecordingsWithManySegments) {
  AhcClusteringConfig config;
  EXPECT_DOUBLE_EQ(config.threshold_for(30.0, 10), 0.60);
  EXPECT_DOUBLE_EQ(config.threshold_for(3600.0, 299), 0.60);
  EXPECT_DOUBLE_EQ(config.threshold_for(600.0, 5000), 0.60);  // "over 600 s"
  EXPECT_DOUBLE_EQ(config.threshold_for(600.5, 300), 0.65);
  config.adaptive_threshold = false;
  EXPECT_DOUBLE_EQ(config.threshold_for(3600.0, 5000), 0.60);
  EXPECT_NO_THROW(config.validate());
  EXPECT_NE(config.describe().find("0.65"), std::string::npos);
  config.min_cluster_size = 0;
  EXPECT_THROW(config.validate(), Error);
}

// One local speaker per chunk, always active; embedding = direction + small per-chunk offset.
struct Synthetic {
  NdArray<float> embeddings;
  NdArray<float> segmentations;
};

Synthetic synthetic(const std::vector<int>& speaker_of_chunk) {
  const std::size_t chunks = speaker_of_chunk.size();
  constexpr std::size_t kDim = 8;
  Synthetic data{NdArray<float>({chunks, 1, kDim}, 0.0f), NdArray<float>({chunks, 10, 1}, 1.0f)};
  for (std::size_t c = 0; c < chunks; ++c) {
    data.embeddings(c, 0, static_cast<std::size_t>(speaker_of_chunk[c])) = 1.0f;
    data.embeddings(c, 0, kDim - 1) = 0.05f * static_cast<float>(c % 3);
  }
  return data;
}

TEST(AhcClustering, FindsSpeakersAndFoldsSmallClustersIntoLargeOnes) {
  // Two speakers with 14 chunks each and two stray chunks of a third direction: at 30
  // embeddings the minimum cluster size is round(3.0) = 3, so the strays join a large cluster.
  std::vector<int> speakers;
  for (int i = 0; i < 14; ++i) speakers.push_back(0);
  for (int i = 0; i < 14; ++i) speakers.push_back(1);
  speakers.push_back(2);
  speakers.push_back(2);
  const Synthetic data = synthetic(speakers);
  const ClusteringResult result =
      cluster_embeddings_ahc(data.embeddings, data.segmentations, AhcClusteringConfig{}, {}, 30.0);
  EXPECT_EQ(result.cluster_count(), 2u);
  EXPECT_DOUBLE_EQ(result.intermediates.threshold, 0.60);
  EXPECT_EQ(result.hard_clusters(0), 0);
  for (int i = 0; i < 14; ++i) EXPECT_EQ(result.hard_clusters(i), 0);
  for (int i = 14; i < 28; ++i) EXPECT_EQ(result.hard_clusters(i), 1);
}

TEST(AhcClustering, HonoursARequestedNumberOfSpeakers) {
  std::vector<int> speakers;
  for (int i = 0; i < 20; ++i) speakers.push_back(i % 4);
  const Synthetic data = synthetic(speakers);
  SpeakerCountConstraints two;
  two.num_speakers = 2;
  const ClusteringResult result =
      cluster_embeddings_ahc(data.embeddings, data.segmentations, AhcClusteringConfig{}, two, 30.0);
  EXPECT_EQ(result.cluster_count(), 2u);
  const ClusteringResult free_count =
      cluster_embeddings_ahc(data.embeddings, data.segmentations, AhcClusteringConfig{}, {}, 30.0);
  EXPECT_EQ(free_count.cluster_count(), 4u);
}

TEST(AhcClustering, RunsOnCommunity1GoldensAndAgreesWithVbxOnTwoSpeakerDialogue) {
  PARLEY_REQUIRE_SHARED(fixture, "goldens/pyannote-community1/01_dialogue");
  const NdArray<float> embeddings =
      npz_get(read_npz(fixture / "raw_embeddings.npz"), "embeddings", fixture).as<float>();
  const NdArray<float> segmentations =
      npz_get(read_npz(fixture / "segmentations.npz"), "segmentations", fixture).as<float>();
  ClusteringConfig config;
  config.method = parse_clustering_method("ahc");
  const ClusteringResult result =
      cluster_embeddings(embeddings, segmentations, config, {}, nullptr, 227.0);
  const NdArray<int> vbx =
      npz_get(read_npz(fixture / "clustering.npz"), "hard_clusters", fixture).as<int>();
  // Same speakers as pyannote's VBx up to a renaming (AHC numbers clusters its own way): the
  // better of the two mappings agrees on 347 of 353 active local speakers.
  ASSERT_EQ(result.cluster_count(), 2u);
  // Compared on active speakers only, as the pipeline masks the others before using them.
  const NdArray<int> hard = mask_inactive_speakers(segmentations, result.hard_clusters);
  std::size_t same = 0;
  std::size_t swapped = 0;
  std::size_t active = 0;
  for (std::size_t i = 0; i < vbx.size(); ++i) {
    if (vbx(i) < 0 || hard(i) < 0) continue;
    ++active;
    same += static_cast<std::size_t>(vbx(i) == hard(i));
    swapped += static_cast<std::size_t>(vbx(i) == 1 - hard(i));
  }
  EXPECT_GT(static_cast<double>(std::max(same, swapped)), 0.97 * static_cast<double>(active));
}

TEST(Clustering, RejectsUnknownMethodsAndMissingPlda) {
  EXPECT_EQ(parse_clustering_method("vbx"), ClusteringMethod::kVbx);
  EXPECT_THROW(parse_clustering_method("spectral"), Error);
  const ClusteringConfig config;
  EXPECT_THROW(cluster_embeddings(NdArray<float>({1, 1, 4}), NdArray<float>({1, 2, 1}), config, {},
                                  nullptr, 1.0),
               Error);
}

}  // namespace
}  // namespace parley::cluster
