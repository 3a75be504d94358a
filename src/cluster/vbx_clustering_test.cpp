#include "cluster/vbx_clustering.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

#include "cluster/goldens_test_support.h"
#include "cluster/inactive_speakers.h"
#include "testing/shared_data.h"
#include "testing/temporary_directory.h"

namespace parley::cluster {
namespace {

using testing::npz_matrix;

struct Inputs {
  NdArray<float> embeddings;
  NdArray<float> segmentations;
};

Inputs load_inputs(const std::filesystem::path& fixture) {
  return {npz_get(read_npz(fixture / "raw_embeddings.npz"), "embeddings", fixture).as<float>(),
          npz_get(read_npz(fixture / "segmentations.npz"), "segmentations", fixture).as<float>()};
}

TEST(SpeakerCountConstraints, ResolveLikePyannote) {
  SpeakerCountConstraints none;
  EXPECT_EQ(none.resolved_min(), 1);
  EXPECT_FALSE(none.resolved_max());
  EXPECT_FALSE(none.resolved_num());
  SpeakerCountConstraints exact{3, 1, 8};
  EXPECT_EQ(exact.resolved_min(), 3);
  EXPECT_EQ(exact.resolved_max(), 3);
  EXPECT_EQ(exact.resolved_num(), 3);
  SpeakerCountConstraints same_bounds{std::nullopt, 2, 2};
  EXPECT_EQ(same_bounds.resolved_num(), 2);
  SpeakerCountConstraints inverted{std::nullopt, 4, 2};
  EXPECT_THROW(inverted.validate(), Error);
  SpeakerCountConstraints zero{0, std::nullopt, std::nullopt};
  EXPECT_THROW(zero.validate(), Error);
  // --num-speakers 3 --min-speakers 5 was accepted (the exact number silently won).
  EXPECT_THROW((SpeakerCountConstraints{3, 5, std::nullopt}.validate()), Error);
  EXPECT_THROW((SpeakerCountConstraints{3, std::nullopt, 2}.validate()), Error);
  EXPECT_NO_THROW((SpeakerCountConstraints{3, 3, 3}.validate()));
}

TEST(VbxClusteringConfig, DefaultsAreCommunity1s) {
  const VbxClusteringConfig config;
  EXPECT_EQ(config.threshold, 0.6);
  EXPECT_EQ(config.vbx.fa, 0.07);
  EXPECT_EQ(config.vbx.fb, 0.8);
  EXPECT_EQ(config.vbx.max_iterations, 20);
  EXPECT_NO_THROW(config.validate());
  EXPECT_NE(config.describe().find("threshold=0.6"), std::string::npos);
}

// The whole VBxClustering.__call__ from pyannote's raw embeddings and binarized segmentations:
// hard clusters identical (same cluster numbering, no permutation), soft clusters and
// centroids equal to float64 rounding, plus every intermediate on the way.
TEST(VbxClustering, MatchesPyannoteCommunity1Goldens) {
  PARLEY_REQUIRE_SHARED(models, "models/plda");
  PARLEY_REQUIRE_SHARED(root, "goldens/pyannote-community1");
  const Plda plda = Plda::load(models);
  int checked = 0;
  for (const auto& fixture : testing::clustering_fixtures(root)) {
    SCOPED_TRACE(fixture.filename().string());
    const Inputs inputs = load_inputs(fixture);
    const ClusteringResult result = cluster_embeddings_vbx(inputs.embeddings, inputs.segmentations,
                                                           plda, VbxClusteringConfig{}, {});
    const auto golden = fixture / "clustering.npz";
    const NdArray<int> expected_hard = npz_get(read_npz(golden), "hard_clusters", golden).as<int>();
    EXPECT_EQ(result.hard_clusters.values(), expected_hard.values());
    EXPECT_EQ(result.intermediates.ahc_labels,
              testing::npy_labels(fixture / "ahc_init_labels.npy"));
    const Eigen::MatrixXd centroids = testing::to_matrix(result.centroids);
    const Eigen::MatrixXd expected_centroids = npz_matrix(golden, "centroids");
    ASSERT_EQ(centroids.rows(), expected_centroids.rows());
    // Measured: centroids <= 1.7e-15, soft clusters <= 1.8e-15 (float64 rounding).
    EXPECT_LT((centroids - expected_centroids).cwiseAbs().maxCoeff(), 1e-10);
    const NdArray<double> expected_soft =
        npz_get(read_npz(golden), "soft_clusters", golden).as<double>();
    ASSERT_EQ(result.soft_clusters.shape(), expected_soft.shape());
    double soft_error = 0.0;
    for (std::size_t i = 0; i < expected_soft.size(); ++i) {
      soft_error = std::max(soft_error, std::abs(result.soft_clusters(i) - expected_soft(i)));
    }
    EXPECT_LT(soft_error, 1e-10);
    EXPECT_FALSE(result.intermediates.used_kmeans);
    ++checked;
  }
  EXPECT_GE(checked, 6);
}

// speakrs' fixture has NaN embeddings for inactive speakers, which exercises pyannote's NaN
// handling (the "inactive" score becomes NaN, then the smallest finite score).
TEST(VbxClustering, MatchesSpeakrsPipelineHardClusters) {
  PARLEY_REQUIRE_SHARED(models, "models/plda");
  PARLEY_REQUIRE_SHARED(root, "goldens/speakrs");
  const Plda plda = Plda::load(models);
  const NdArray<float> embeddings = read_npy(root / "pipeline_embeddings_data.npy").as<float>();
  const NdArray<float> segmentations =
      read_npy(root / "pipeline_segmentation_data.npy").as<float>();
  const ClusteringResult result =
      cluster_embeddings_vbx(embeddings, segmentations, plda, VbxClusteringConfig{}, {});
  const NdArray<int> expected = read_npy(root / "pipeline_hard_clusters.npy").as<int>();
  // speakrs saved the pipeline's hard clusters after inactive speakers were set to -2 (the
  // masking SpeakerDiarization.apply does after clustering).
  EXPECT_EQ(mask_inactive_speakers(segmentations, result.hard_clusters).values(),
            expected.values());
  const std::vector<int> chunk_idx = testing::npy_labels(root / "pipeline_train_chunk_idx.npy");
  ASSERT_EQ(result.intermediates.train_chunk_index.size(), chunk_idx.size());
}

TEST(VbxClustering, ForcedSpeakerCountFallsBackToKMeans) {
  PARLEY_REQUIRE_SHARED(models, "models/plda");
  PARLEY_REQUIRE_SHARED(fixture, "goldens/pyannote-community1/02_pyannote_sample");
  const Plda plda = Plda::load(models);
  const Inputs inputs = load_inputs(fixture);
  SpeakerCountConstraints three;
  three.num_speakers = 3;
  const ClusteringResult result = cluster_embeddings_vbx(inputs.embeddings, inputs.segmentations,
                                                         plda, VbxClusteringConfig{}, three);
  EXPECT_TRUE(result.intermediates.used_kmeans);
  EXPECT_EQ(result.cluster_count(), 3u);
  // Unconstrained argmax: every active speaker gets a cluster, every cluster is in range.
  for (const int cluster : result.hard_clusters.values()) {
    EXPECT_TRUE(cluster == -2 || (cluster >= 0 && cluster < 3));
  }
  // The same request again gives the same answer (seeded k-means++).
  const ClusteringResult again = cluster_embeddings_vbx(inputs.embeddings, inputs.segmentations,
                                                        plda, VbxClusteringConfig{}, three);
  EXPECT_EQ(again.hard_clusters.values(), result.hard_clusters.values());
  // A bound VBx already satisfies changes nothing.
  SpeakerCountConstraints at_most_four;
  at_most_four.max_speakers = 4;
  const ClusteringResult bounded = cluster_embeddings_vbx(
      inputs.embeddings, inputs.segmentations, plda, VbxClusteringConfig{}, at_most_four);
  EXPECT_FALSE(bounded.intermediates.used_kmeans);
  EXPECT_EQ(bounded.cluster_count(), 2u);
}

TEST(VbxClustering, TooFewEmbeddingsGiveOneCluster) {
  PARLEY_REQUIRE_SHARED(models, "models/plda");
  const Plda plda = Plda::load(models);
  NdArray<float> embeddings({2, 3, 256}, 0.5f);
  NdArray<float> segmentations({2, 100, 3}, 0.0f);
  for (std::size_t frame = 0; frame < 100; ++frame) segmentations(0, frame, 1) = 1.0f;
  const ClusteringResult result =
      cluster_embeddings_vbx(embeddings, segmentations, plda, VbxClusteringConfig{}, {});
  EXPECT_EQ(result.cluster_count(), 1u);
  // Everyone in the one cluster, as pyannote's early exit; the pipeline then masks the
  // speakers that never speak.
  EXPECT_EQ(result.hard_clusters.values(), (std::vector<int>(6, 0)));
  EXPECT_EQ(mask_inactive_speakers(segmentations, result.hard_clusters).values(),
            (std::vector<int>{-2, 0, -2, -2, -2, -2}));
}

TEST(VbxClustering, WritesIntermediatesInTheGoldensLayout) {
  PARLEY_REQUIRE_SHARED(models, "models/plda");
  PARLEY_REQUIRE_SHARED(fixture, "goldens/pyannote-community1/02_pyannote_sample");
  const Plda plda = Plda::load(models);
  const Inputs inputs = load_inputs(fixture);
  const ClusteringResult result = cluster_embeddings_vbx(inputs.embeddings, inputs.segmentations,
                                                         plda, VbxClusteringConfig{}, {});
  const parley::testing::TemporaryDirectory temp("vbx-clustering-test");
  const auto out = temp / "intermediates";
  write_clustering_intermediates(out, result);
  for (const char* name :
       {"plda_embeddings.npz", "vbx_state.npz", "clustering.npz", "ahc_state.npz"}) {
    const NpzArchive written = read_npz(out / name);
    const NpzArchive golden = read_npz(fixture / name);
    for (const auto& [key, array] : golden) {
      SCOPED_TRACE(std::string(name) + ":" + key);
      ASSERT_TRUE(written.count(key));
      EXPECT_EQ(written.at(key).type, array.type);
      EXPECT_EQ(written.at(key).shape, array.shape);
    }
  }
  EXPECT_EQ(testing::npy_labels(out / "ahc_init_labels.npy"),
            testing::npy_labels(fixture / "ahc_init_labels.npy"));
}

// The subsampled initialisation's definition, written with Eigen expressions: AHC on every
// k-th row, every other row joined to the nearest centroid of those clusters.
std::vector<int> subsampled_labels_reference(const Eigen::MatrixXd& rows, double threshold,
                                             std::size_t stride) {
  const auto sampled_count =
      (rows.rows() + static_cast<Eigen::Index>(stride) - 1) / static_cast<Eigen::Index>(stride);
  Eigen::MatrixXd sampled(sampled_count, rows.cols());
  for (Eigen::Index i = 0; i < sampled_count; ++i) {
    sampled.row(i) = rows.row(i * static_cast<Eigen::Index>(stride));
  }
  const std::vector<int> sampled_labels = ahc_initial_labels(sampled, threshold, 0);
  const int clusters = 1 + *std::max_element(sampled_labels.begin(), sampled_labels.end());
  Eigen::MatrixXd centroids = Eigen::MatrixXd::Zero(clusters, rows.cols());
  Eigen::VectorXd sizes = Eigen::VectorXd::Zero(clusters);
  for (Eigen::Index i = 0; i < sampled_count; ++i) {
    centroids.row(sampled_labels[static_cast<std::size_t>(i)]) += sampled.row(i);
    sizes(sampled_labels[static_cast<std::size_t>(i)]) += 1.0;
  }
  centroids.array().colwise() /= sizes.array();
  std::vector<int> labels(static_cast<std::size_t>(rows.rows()));
  for (Eigen::Index row = 0; row < rows.rows(); ++row) {
    Eigen::Index nearest = 0;
    if (row % static_cast<Eigen::Index>(stride) == 0) {
      nearest = sampled_labels[static_cast<std::size_t>(row) / stride];
    } else {
      (centroids.rowwise() - rows.row(row)).rowwise().squaredNorm().minCoeff(&nearest);
    }
    labels[static_cast<std::size_t>(row)] = static_cast<int>(nearest);
  }
  return labels;
}

TEST(AhcInitialLabels, SubsamplingJoinsEveryOtherRowToTheNearestCentroid) {
  std::mt19937 random(9);
  std::normal_distribution<double> normal;
  for (const Eigen::Index count : {50, 333, 1200}) {
    Eigen::MatrixXd points(count, 24);
    for (Eigen::Index k = 0; k < points.size(); ++k) points.data()[k] = normal(random);
    points.rowwise().normalize();
    for (const std::size_t limit : {10, 100, 400}) {
      const std::size_t stride = (static_cast<std::size_t>(count) + limit - 1) / limit;
      if (stride < 2) continue;
      const std::vector<int> labels = ahc_initial_labels(points, 0.9, limit);
      EXPECT_EQ(labels, subsampled_labels_reference(points, 0.9, stride))
          << count << " rows, at most " << limit;
      EXPECT_GT(*std::max_element(labels.begin(), labels.end()), 1);  // several centroids
    }
  }
}

}  // namespace
}  // namespace parley::cluster

namespace parley::cluster {
namespace {

// Three well-separated groups of unit vectors: the subsampled initialisation must find the same
// three groups as the exact one, and at or under the limit it is the exact one.
TEST(AhcInitialLabels, SubsamplingAboveTheLimitKeepsSeparateSpeakersApart) {
  std::mt19937 random(7);
  std::normal_distribution<double> noise(0.0, 0.05);
  const Eigen::Index per_group = 300;
  const Eigen::Index dimension = 16;
  Eigen::MatrixXd points(3 * per_group, dimension);
  for (Eigen::Index row = 0; row < points.rows(); ++row) {
    // Interleaved, as speakers take turns along a recording.
    const Eigen::Index group = row % 3;
    for (Eigen::Index d = 0; d < dimension; ++d) {
      points(row, d) = (d == group ? 1.0 : 0.0) + noise(random);
    }
    points.row(row).normalize();
  }
  const std::vector<int> exact = ahc_initial_labels(points, 0.6, 0);
  EXPECT_EQ(ahc_initial_labels(points, 0.6, static_cast<std::size_t>(points.rows())), exact);
  const std::vector<int> sampled = ahc_initial_labels(points, 0.6, 100);
  ASSERT_EQ(sampled.size(), exact.size());
  // The same partition, whatever the numbering.
  std::map<int, int> exact_to_sampled;
  for (std::size_t i = 0; i < exact.size(); ++i) {
    const auto [it, fresh] = exact_to_sampled.emplace(exact[i], sampled[i]);
    EXPECT_EQ(it->second, sampled[i]) << "row " << i;
  }
  EXPECT_EQ(exact_to_sampled.size(), 3u);
}

}  // namespace
}  // namespace parley::cluster
