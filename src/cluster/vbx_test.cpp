#include "cluster/vbx.h"

#include <gtest/gtest.h>

#include "cluster/goldens_test_support.h"
#include "testing/shared_data.h"

namespace parley::cluster {
namespace {

using testing::npz_matrix;
using testing::npz_vector;

TEST(Vbx, ConfigValidatesAndDescribesItself) {
  VbxConfig config;
  EXPECT_NO_THROW(config.validate());
  EXPECT_NE(config.describe().find("Fa=0.07"), std::string::npos);
  config.fb = 0.0;
  EXPECT_THROW(config.validate(), Error);
}

TEST(Vbx, SeparatesTwoObviousSpeakersAndDropsASpuriousCluster) {
  // Two tight groups in a 2-d PLDA space, initialised with a third, spurious cluster.
  Eigen::MatrixXd features(6, 2);
  features << 3, 0, 3.1, 0.1, 2.9, -0.1, -3, 0, -3.1, 0.1, -2.9, -0.1;
  const Eigen::VectorXd phi = Eigen::Vector2d(10.0, 1.0);
  VbxConfig config;
  config.fa = 1.0;
  config.fb = 1.0;
  const VbxResult result = cluster_vbx(features, phi, {0, 0, 2, 1, 1, 1}, config);
  ASSERT_EQ(result.responsibilities.cols(), 3);
  EXPECT_NEAR(result.speaker_priors.sum(), 1.0, 1e-12);
  for (int t = 0; t < 3; ++t) EXPECT_GT(result.responsibilities(t, 0), 0.99);
  for (int t = 3; t < 6; ++t) EXPECT_GT(result.responsibilities(t, 1), 0.99);
  EXPECT_LT(result.speaker_priors(2), 1e-3);
  for (std::size_t i = 1; i < result.elbo.size(); ++i)
    EXPECT_GE(result.elbo[i], result.elbo[i - 1]);
}

// From pyannote's own PLDA features and AHC labels: the smoothed initialisation, the final
// responsibilities and priors, and the whole ELBO trajectory (same number of iterations).
TEST(Vbx, MatchesPyannoteCommunity1VbxState) {
  PARLEY_REQUIRE_SHARED(root, "goldens/pyannote-community1");
  int checked = 0;
  for (const auto& fixture : testing::clustering_fixtures(root)) {
    SCOPED_TRACE(fixture.filename().string());
    const auto state = fixture / "vbx_state.npz";
    VbxConfig config;
    config.fa = npz_vector(state, "fa")(0);
    config.fb = npz_vector(state, "fb")(0);
    config.max_iterations = static_cast<int>(npz_vector(state, "max_iters")(0));
    const VbxResult result =
        cluster_vbx(npz_matrix(fixture / "plda_embeddings.npz", "post_plda"),
                    npz_vector(fixture / "plda_embeddings.npz", "phi"),
                    testing::npy_labels(fixture / "ahc_init_labels.npy"), config);
    EXPECT_LT((result.initial_responsibilities - npz_matrix(state, "qinit")).cwiseAbs().maxCoeff(),
              1e-12);
    // Measured: gamma <= 7e-15, pi <= 5e-16, ELBO to ~1e-13 relative.
    EXPECT_LT((result.responsibilities - npz_matrix(state, "q_final")).cwiseAbs().maxCoeff(), 1e-9);
    EXPECT_LT((result.speaker_priors - npz_vector(state, "sp_final")).cwiseAbs().maxCoeff(), 1e-9);
    const Eigen::VectorXd elbo = npz_vector(state, "elbo_trajectory");
    ASSERT_EQ(result.elbo.size(), static_cast<std::size_t>(elbo.size()));
    for (std::size_t i = 0; i < result.elbo.size(); ++i) {
      EXPECT_NEAR(result.elbo[i], elbo(static_cast<Eigen::Index>(i)),
                  1e-9 * std::abs(elbo(static_cast<Eigen::Index>(i))));
    }
    ++checked;
  }
  EXPECT_GE(checked, 6);
}

TEST(Vbx, MatchesSpeakrsPipelineGammaAndPi) {
  PARLEY_REQUIRE_SHARED(root, "goldens/speakrs");
  const VbxResult result = cluster_vbx(
      testing::to_matrix(read_npy(root / "pipeline_plda_features.npy").as<double>()),
      Eigen::VectorXd(testing::to_matrix(read_npy(root / "pipeline_plda_phi.npy").as<double>())),
      testing::npy_labels(root / "pipeline_ahc_clusters.npy"), VbxConfig{});
  const Eigen::MatrixXd gamma =
      testing::to_matrix(read_npy(root / "pipeline_vbx_gamma.npy").as<double>());
  const Eigen::MatrixXd pi =
      testing::to_matrix(read_npy(root / "pipeline_vbx_pi.npy").as<double>());
  EXPECT_LT((result.responsibilities - gamma).cwiseAbs().maxCoeff(), 1e-9);
  EXPECT_LT((result.speaker_priors - pi.col(0)).cwiseAbs().maxCoeff(), 1e-9);
}

}  // namespace
}  // namespace parley::cluster
