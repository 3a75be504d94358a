#include "cluster/assignment.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/error.h"

namespace parley::cluster {
namespace {

// soft [1 chunk, speakers, clusters] from rows of scores.
NdArray<double> one_chunk(std::size_t speakers, std::size_t clusters, std::vector<double> scores) {
  return NdArray<double>({1, speakers, clusters}, std::move(scores));
}

// 2 - scipy's cosine distance, bit for bit as written with Eigen (u.dot(v) / (|u| |v|),
// clipped, the centroids' norms row-wise), NaN for a NaN embedding.
TEST(CentroidSimilarities, AreTwoMinusTheCosineDistanceBitForBit) {
  std::mt19937 random(4);
  std::normal_distribution<double> normal;
  NdArray<float> embeddings({5, 3, 67});
  for (float& value : embeddings.values()) value = static_cast<float>(normal(random));
  embeddings(2, 1, 5) = std::nanf("");
  for (const Eigen::Index clusters : {1, 2, 9}) {
    Eigen::MatrixXd centroids(clusters, 67);
    for (Eigen::Index k = 0; k < centroids.size(); ++k) centroids.data()[k] = normal(random);
    const NdArray<double> soft = centroid_similarities(embeddings, centroids);
    const Eigen::VectorXd centroid_norms = centroids.rowwise().norm();
    for (std::size_t c = 0; c < 5; ++c) {
      for (std::size_t s = 0; s < 3; ++s) {
        Eigen::VectorXd u(67);
        for (Eigen::Index d = 0; d < 67; ++d) u(d) = embeddings(c, s, static_cast<std::size_t>(d));
        for (Eigen::Index k = 0; k < clusters; ++k) {
          double cosine = u.dot(centroids.row(k).transpose()) / (u.norm() * centroid_norms(k));
          if (std::abs(cosine) > 1.0) cosine = std::copysign(1.0, cosine);
          const double expected = 2.0 - (1.0 - cosine);
          const double actual = soft(c, s, static_cast<std::size_t>(k));
          if (std::isnan(expected)) {
            EXPECT_TRUE(std::isnan(actual));
          } else {
            EXPECT_EQ(actual, expected) << "chunk " << c << ", speaker " << s << ", cluster " << k;
          }
        }
      }
    }
  }
}

TEST(ConstrainedArgmax, GivesDistinctClustersToAChunksSpeakers) {
  // Plain argmax would give both speakers cluster 1.
  const NdArray<int> hard = constrained_argmax(one_chunk(2, 3, {0.1, 0.9, 0.5, 0.8, 0.7, 0.2}));
  EXPECT_EQ(hard.values(), (std::vector<int>{1, 0}));
  EXPECT_EQ(unconstrained_argmax(one_chunk(2, 3, {0.1, 0.9, 0.5, 0.8, 0.7, 0.2})).values(),
            (std::vector<int>{1, 0}));
}

TEST(ConstrainedArgmax, LeavesExtraSpeakersUnassigned) {
  // Three local speakers, two clusters: the weakest match gets -2.
  const NdArray<int> hard = constrained_argmax(one_chunk(3, 2, {0.1, 0.2, 0.9, 0.3, 0.4, 0.8}));
  EXPECT_EQ(hard.values(), (std::vector<int>{-2, 0, 1}));
}

// Ties, as inactive speakers produce them: the answers scipy 1.10.1's linear_sum_assignment
// gives (an offline comparison over 600 random tie-heavy matrices agreed on every one).
TEST(ConstrainedArgmax, ResolvesTiesExactlyAsScipy) {
  EXPECT_EQ(constrained_argmax(one_chunk(3, 3, std::vector<double>(9, -1.5))).values(),
            (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(constrained_argmax(one_chunk(2, 3, {1, 1, 0, 1, 1, 1})).values(),
            (std::vector<int>{0, 1}));
  EXPECT_EQ(constrained_argmax(one_chunk(3, 2, {2, 2, 2, 2, 1, 2})).values(),
            (std::vector<int>{0, 1, -2}));
}

TEST(ConstrainedArgmax, TreatsNaNAsTheSmallestScore) {
  const double nan = std::nan("");
  // NaN becomes the smallest finite score (0.2), so speaker 1 loses cluster 0 to speaker 0.
  const NdArray<int> hard = constrained_argmax(one_chunk(2, 2, {0.5, 0.3, nan, 0.2}));
  EXPECT_EQ(hard.values(), (std::vector<int>{0, 1}));
}

TEST(AssignInactiveLast, GivesInactiveSpeakersClustersLast) {
  // Speaker 0 is inactive but scores best on cluster 0; the active speaker 1 must get it.
  NdArray<double> soft = one_chunk(2, 2, {0.9, 0.1, 0.8, 0.7});
  NdArray<float> segmentations({1, 4, 2}, 0.0f);
  for (std::size_t frame = 0; frame < 4; ++frame) segmentations(0, frame, 1) = 1.0f;
  const NdArray<int> hard = assign_inactive_last(soft, segmentations);
  EXPECT_EQ(hard.values(), (std::vector<int>{1, 0}));
  EXPECT_DOUBLE_EQ(soft(0), 0.1 - 1.0);  // min - 1, as pyannote writes it into soft_clusters
}

TEST(UnconstrainedArgmax, PicksTheFirstNaNLikeNumpy) {
  const double nan = std::nan("");
  EXPECT_EQ(unconstrained_argmax(one_chunk(1, 3, {0.9, nan, 0.1})).values(), (std::vector<int>{1}));
}

TEST(SelectTrainingEmbeddings, KeepsFiniteSpeakersActiveAloneLongEnough) {
  NdArray<float> embeddings({1, 3, 2}, 1.0f);
  embeddings(0, 2, 1) = std::nanf("");
  NdArray<float> segmentations({1, 10, 3}, 0.0f);
  for (std::size_t frame = 0; frame < 10; ++frame) {
    segmentations(0, frame, 0) = 1.0f;                     // alone in 8 of 10 frames
    segmentations(0, frame, 1) = frame < 2 ? 1.0f : 0.0f;  // never alone
  }
  const TrainingSet training = select_training_embeddings(embeddings, segmentations, 0.2);
  ASSERT_EQ(training.size(), 1u);
  EXPECT_EQ(training.speaker_index[0], 0u);
  EXPECT_THROW(select_training_embeddings(embeddings, NdArray<float>({2, 10, 3}), 0.2), Error);
}

}  // namespace
}  // namespace parley::cluster
