#include "cluster/scipy_linkage.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>

#include "cluster/assignment.h"
#include "cluster/goldens_test_support.h"
#include "testing/shared_data.h"

namespace parley::cluster {
namespace {

std::size_t condensed_index_for_test(std::size_t n, std::size_t i, std::size_t j) {
  return n * i - i * (i + 1) / 2 + (j - i - 1);
}

Eigen::MatrixXd points_1d(std::initializer_list<double> values) {
  Eigen::MatrixXd points(static_cast<Eigen::Index>(values.size()), 1);
  Eigen::Index row = 0;
  for (const double value : values) points(row++, 0) = value;
  return points;
}

TEST(Ahc, CentroidLinkageMatchesHandComputedDendrogram) {
  // 0, 1, 3, 7: {0,1} at 1 (centroid 0.5), {0,1,3} at 2.5 (centroid 4/3), all at 7 - 4/3.
  const Eigen::MatrixXd points = points_1d({0.0, 1.0, 3.0, 7.0});
  const Dendrogram tree =
      linkage(condensed_euclidean_distances(points), 4, LinkageMethod::kCentroid);
  ASSERT_EQ(tree.size(), 3u);
  EXPECT_EQ(tree[0].first, 0);
  EXPECT_EQ(tree[0].second, 1);
  EXPECT_DOUBLE_EQ(tree[0].distance, 1.0);
  EXPECT_EQ(tree[0].size, 2);
  EXPECT_EQ(tree[1].first, 2);
  EXPECT_EQ(tree[1].second, 4);
  EXPECT_DOUBLE_EQ(tree[1].distance, 2.5);
  EXPECT_EQ(tree[2].first, 3);
  EXPECT_EQ(tree[2].second, 5);
  EXPECT_NEAR(tree[2].distance, 7.0 - 4.0 / 3.0, 1e-12);
  EXPECT_EQ(tree[2].size, 4);
}

TEST(Ahc, FclusterNumbersClustersInScipyDepthFirstOrder) {
  const Eigen::MatrixXd points = points_1d({0.0, 1.0, 3.0, 7.0});
  const Dendrogram tree =
      linkage(condensed_euclidean_distances(points), 4, LinkageMethod::kCentroid);
  // The root's left child is observation 3, but scipy descends into node children first, so
  // {0, 1} is cluster 0, then 2, then 3.
  EXPECT_EQ(fcluster_distance(tree, 2.0), (std::vector<int>{0, 0, 1, 2}));
  EXPECT_EQ(fcluster_distance(tree, 2.5), (std::vector<int>{0, 0, 0, 1}));
  EXPECT_EQ(fcluster_distance(tree, 0.5), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(fcluster_distance(tree, 10.0), (std::vector<int>{0, 0, 0, 0}));
}

TEST(Ahc, FclusterUsesTheLargestMergeInsideEachSubtree) {
  // Isosceles triangle: {0, 1} merge at 1, then their centroid is 0.9 from point 2, an inversion
  // centroid linkage allows. A cut at 0.95 must not join anything.
  Eigen::MatrixXd points(3, 2);
  points << 0.0, 0.0, 1.0, 0.0, 0.5, 0.9;
  const Dendrogram tree =
      linkage(condensed_euclidean_distances(points), 3, LinkageMethod::kCentroid);
  EXPECT_NEAR(tree[1].distance, 0.9, 1e-12);
  EXPECT_EQ(fcluster_distance(tree, 0.95), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(fcluster_distance(tree, 1.0 + 1e-12), (std::vector<int>{0, 0, 0}));
}

// Points on an integer grid, full of equal distances: the dendrogram and flat clusters scipy
// 1.10.1 gives (an offline comparison over 300 random tie-heavy sets, centroid and median
// linkage, agreed on every merge and label).
TEST(Ahc, ResolvesTiesExactlyAsScipy) {
  Eigen::MatrixXd points(8, 2);
  points << 0, 0, 1, 0, 0, 1, 1, 1, 3, 0, 3, 1, 4, 0, 0, 3;
  const Dendrogram tree =
      linkage(condensed_euclidean_distances(points), 8, LinkageMethod::kCentroid);
  const std::vector<std::array<double, 4>> expected{{0, 1, 1.0, 2},
                                                    {4, 5, 1.0, 2},
                                                    {2, 3, 1.0, 2},
                                                    {8, 10, 1.0, 4},
                                                    {6, 9, 1.118033988749895, 3},
                                                    {7, 11, 2.5495097567963922, 5},
                                                    {12, 13, 3.0081371127142607, 8}};
  ASSERT_EQ(tree.size(), expected.size());
  for (std::size_t k = 0; k < tree.size(); ++k) {
    SCOPED_TRACE(k);
    EXPECT_EQ(tree[k].first, expected[k][0]);
    EXPECT_EQ(tree[k].second, expected[k][1]);
    EXPECT_NEAR(tree[k].distance, expected[k][2], 1e-15);
    EXPECT_EQ(tree[k].size, expected[k][3]);
  }
  EXPECT_EQ(fcluster_distance(tree, 1.5), (std::vector<int>{1, 1, 1, 1, 0, 0, 0, 2}));
  EXPECT_EQ(fcluster_distance(tree, 1.0), (std::vector<int>{2, 2, 2, 2, 0, 0, 1, 3}));
}

TEST(Ahc, DistancesDoNotDependOnTheThreadCount) {
  Eigen::MatrixXd points(301, 37);
  for (Eigen::Index i = 0; i < points.size(); ++i) {
    points.data()[i] = std::sin(0.37 * static_cast<double>(i)) + 0.01 * static_cast<double>(i % 7);
  }
  const std::vector<double> single = condensed_euclidean_distances(points, 1);
  ASSERT_EQ(single.size(), 301u * 300u / 2u);
  EXPECT_NEAR(single[condensed_index_for_test(301, 4, 9)], (points.row(4) - points.row(9)).norm(),
              1e-12);
  for (const unsigned threads : {2U, 3U, 7U}) {
    EXPECT_EQ(condensed_euclidean_distances(points, threads), single);  // bitwise
    EXPECT_EQ(condensed_cosine_distances(points, threads), condensed_cosine_distances(points, 1));
  }
}

// The documented per-pair sum: four partial sums of (a - b)², the r-th over the dimensions
// d = r (mod 4) below the last multiple of 4, the rest added to the first, combined as
// (s0 + s1) + (s2 + s3).
double plain_distance(const Eigen::MatrixXd& points, Eigen::Index i, Eigen::Index j) {
  std::array<double, 4> sums{};
  const Eigen::Index blocked = points.cols() / 4 * 4;
  for (Eigen::Index d = 0; d < points.cols(); ++d) {
    const double difference = points(i, d) - points(j, d);
    sums[d < blocked ? static_cast<std::size_t>(d % 4) : 0] += difference * difference;
  }
  return std::sqrt((sums[0] + sums[1]) + (sums[2] + sums[3]));
}

TEST(Ahc, DistancesAreBitwiseThePlainPerPairSums) {
  std::mt19937 random(3);
  std::normal_distribution<double> normal;
  for (const Eigen::Index n : {2, 3, 31, 33, 100, 257}) {
    for (const Eigen::Index dimension : {1, 3, 4, 7, 64, 130}) {
      Eigen::MatrixXd points(n, dimension);
      for (Eigen::Index k = 0; k < points.size(); ++k) points.data()[k] = normal(random);
      for (const unsigned threads : {1U, 3U}) {
        const std::vector<double> distances = condensed_euclidean_distances(points, threads);
        ASSERT_EQ(distances.size(), static_cast<std::size_t>(n * (n - 1) / 2));
        std::size_t k = 0;
        for (Eigen::Index i = 0; i < n; ++i) {
          for (Eigen::Index j = i + 1; j < n; ++j) {
            ASSERT_EQ(distances[k++], plain_distance(points, i, j))
                << n << " points of " << dimension << " dimensions, pair " << i << ", " << j;
          }
        }
      }
    }
  }
}

// A plain O(n³) agglomeration: merge the closest pair of live clusters, update its distances
// with the Lance–Williams formula (scipy's operation order). Without ties (random real data)
// linkage must give the same merges, bit for bit.
Dendrogram plain_linkage(const std::vector<double>& condensed, int n, LinkageMethod method) {
  std::vector<std::vector<double>> distance(static_cast<std::size_t>(n),
                                            std::vector<double>(static_cast<std::size_t>(n)));
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j < n; ++j) {
      distance[i][j] = distance[j][i] = condensed[condensed_index_for_test(n, i, j)];
    }
  }
  std::vector<int> ids(static_cast<std::size_t>(n));
  std::vector<int> sizes(static_cast<std::size_t>(n), 1);
  for (int i = 0; i < n; ++i) ids[i] = i;
  Dendrogram dendrogram;
  for (int k = 0; k < n - 1; ++k) {
    int x = -1;
    int y = -1;
    for (int i = 0; i < n; ++i) {
      for (int j = i + 1; j < n; ++j) {
        if (sizes[i] > 0 && sizes[j] > 0 && (x < 0 || distance[i][j] < distance[x][y])) {
          x = i;
          y = j;
        }
      }
    }
    const double d_xy = distance[x][y];
    const double nx = sizes[x];
    const double ny = sizes[y];
    for (int z = 0; z < n; ++z) {
      if (sizes[z] == 0 || z == x || z == y) continue;
      const double d_xz = distance[x][z];
      const double d_yz = distance[y][z];
      double updated = 0.0;
      switch (method) {
        case LinkageMethod::kCentroid:
          updated = std::sqrt(((nx * d_xz * d_xz + ny * d_yz * d_yz) -
                               static_cast<double>(sizes[x] * sizes[y]) * d_xy * d_xy / (nx + ny)) /
                              (nx + ny));
          break;
        case LinkageMethod::kMedian:
          updated = std::sqrt(0.5 * (d_xz * d_xz + d_yz * d_yz) - 0.25 * d_xy * d_xy);
          break;
        case LinkageMethod::kAverage:
          updated = (nx * d_xz + ny * d_yz) / (nx + ny);
          break;
        case LinkageMethod::kComplete:
          updated = std::max(d_xz, d_yz);
          break;
      }
      distance[y][z] = distance[z][y] = updated;
    }
    dendrogram.push_back(
        {std::min(ids[x], ids[y]), std::max(ids[x], ids[y]), d_xy, sizes[x] + sizes[y]});
    sizes[y] += sizes[x];
    sizes[x] = 0;
    ids[y] = n + k;
  }
  return dendrogram;
}

TEST(Ahc, LinkageMakesThePlainAgglomerationsMerges) {
  std::mt19937 random(5);
  std::normal_distribution<double> normal;
  for (int trial = 0; trial < 40; ++trial) {
    const int n = 2 + static_cast<int>(random() % 120);
    Eigen::MatrixXd points(n, 1 + static_cast<Eigen::Index>(random() % 12));
    for (Eigen::Index k = 0; k < points.size(); ++k) points.data()[k] = normal(random);
    const std::vector<double> distances = condensed_euclidean_distances(points);
    for (const LinkageMethod method : {LinkageMethod::kCentroid, LinkageMethod::kMedian,
                                       LinkageMethod::kAverage, LinkageMethod::kComplete}) {
      SCOPED_TRACE(::testing::Message() << n << " points, " << to_string(method));
      const Dendrogram expected = plain_linkage(distances, n, method);
      const Dendrogram tree = linkage(distances, n, method);
      ASSERT_EQ(tree.size(), expected.size());
      for (std::size_t k = 0; k < tree.size(); ++k) {
        ASSERT_EQ(tree[k].first, expected[k].first) << "merge " << k;
        ASSERT_EQ(tree[k].second, expected[k].second) << "merge " << k;
        ASSERT_EQ(tree[k].distance, expected[k].distance) << "merge " << k;  // bitwise
        ASSERT_EQ(tree[k].size, expected[k].size) << "merge " << k;
      }
    }
  }
}

TEST(Ahc, RejectsNonFiniteDistances) {
  EXPECT_THROW(linkage({std::nan("")}, 2, LinkageMethod::kCentroid), Error);
  EXPECT_THROW(linkage({1.0}, 1, LinkageMethod::kCentroid), Error);
}

// The AHC initialisation labels pyannote computed (ahc_init_labels.npy) from the same training
// embeddings, for every community-1 golden: identical, label for label.
TEST(Ahc, MatchesPyannoteCommunity1InitLabels) {
  PARLEY_REQUIRE_SHARED(root, "goldens/pyannote-community1");
  int checked = 0;
  for (const auto& fixture : testing::clustering_fixtures(root)) {
    SCOPED_TRACE(fixture.filename().string());
    const NdArray<float> embeddings =
        npz_get(read_npz(fixture / "raw_embeddings.npz"), "embeddings", fixture).as<float>();
    const NdArray<float> segmentations =
        npz_get(read_npz(fixture / "segmentations.npz"), "segmentations", fixture).as<float>();
    const TrainingSet training = select_training_embeddings(embeddings, segmentations, 0.2);
    const Eigen::MatrixXd normalised = normalise_rows_like_float32(training.embeddings);
    const Dendrogram tree = linkage(condensed_euclidean_distances(normalised),
                                    static_cast<int>(normalised.rows()), LinkageMethod::kCentroid);
    const double threshold = testing::npz_vector(fixture / "ahc_state.npz", "threshold")(0);
    EXPECT_EQ(fcluster_distance(tree, threshold),
              testing::npy_labels(fixture / "ahc_init_labels.npy"));
    ++checked;
  }
  EXPECT_GE(checked, 6);
}

TEST(Ahc, MatchesSpeakrsPipelineClusters) {
  PARLEY_REQUIRE_SHARED(root, "goldens/speakrs");
  const Eigen::MatrixXd train =
      testing::to_matrix(read_npy(root / "pipeline_train_embeddings.npy").as<double>());
  const Eigen::MatrixXd normalised = normalise_rows_like_float32(train);
  const Dendrogram tree = linkage(condensed_euclidean_distances(normalised),
                                  static_cast<int>(normalised.rows()), LinkageMethod::kCentroid);
  EXPECT_EQ(fcluster_distance(tree, 0.6), testing::npy_labels(root / "pipeline_ahc_clusters.npy"));
}

}  // namespace
}  // namespace parley::cluster
