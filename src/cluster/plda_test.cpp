#include "cluster/plda.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "cluster/assignment.h"
#include "cluster/goldens_test_support.h"
#include "core/npz.h"
#include "core/temporary_directory.h"
#include "testing/shared_data.h"

namespace parley::cluster {
namespace {

using testing::npz_matrix;
using testing::npz_vector;

TEST(Plda, LoadFailsWithAHelpfulMessageWhenFilesAreMissing) {
  try {
    Plda::load("/nonexistent-plda-folder");
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("xvec_transform.npz"), std::string::npos);
  }
}

TEST(Plda, PhiIsSortedLargestFirstAndMatchesPyannote) {
  PARLEY_REQUIRE_SHARED(models, "models/plda");
  PARLEY_REQUIRE_SHARED(golden, "goldens/pyannote-community1/01_dialogue/plda_embeddings.npz");
  const Plda plda = Plda::load(models);
  ASSERT_EQ(plda.phi().size(), 128);
  ASSERT_EQ(plda.input_dimension(), 256);
  for (Eigen::Index i = 1; i < plda.phi().size(); ++i) EXPECT_GE(plda.phi()(i - 1), plda.phi()(i));
  const Eigen::VectorXd expected = npz_vector(golden, "phi");
  // The same LAPACK routine as scipy: agreement to rounding.
  EXPECT_LT(((plda.phi() - expected).array() / expected.array()).abs().maxCoeff(), 1e-9);
}

// For every community-1 golden: the training embeddings pyannote selected, then post_xvec and
// post_plda (the features VBx sees), signs of the PLDA dimensions included (same LAPACK routine).
TEST(Plda, MatchesPyannoteCommunity1Goldens) {
  PARLEY_REQUIRE_SHARED(models, "models/plda");
  PARLEY_REQUIRE_SHARED(root, "goldens/pyannote-community1");
  const Plda plda = Plda::load(models);
  int checked = 0;
  for (const auto& fixture : testing::clustering_fixtures(root)) {
    SCOPED_TRACE(fixture.filename().string());
    const NdArray<float> embeddings =
        npz_get(read_npz(fixture / "raw_embeddings.npz"), "embeddings", fixture).as<float>();
    const NdArray<float> segmentations =
        npz_get(read_npz(fixture / "segmentations.npz"), "segmentations", fixture).as<float>();
    const TrainingSet training = select_training_embeddings(embeddings, segmentations, 0.2);
    const auto golden = fixture / "plda_embeddings.npz";
    const Eigen::VectorXd chunk_idx = npz_vector(golden, "train_chunk_idx");
    const Eigen::VectorXd speaker_idx = npz_vector(golden, "train_speaker_idx");
    ASSERT_EQ(training.size(), static_cast<std::size_t>(chunk_idx.size()));
    for (std::size_t i = 0; i < training.size(); ++i) {
      ASSERT_EQ(training.chunk_index[i],
                static_cast<std::size_t>(chunk_idx(static_cast<Eigen::Index>(i))));
      ASSERT_EQ(training.speaker_index[i],
                static_cast<std::size_t>(speaker_idx(static_cast<Eigen::Index>(i))));
    }
    const Eigen::MatrixXd post_xvec = plda.xvec_transform(training.embeddings);
    // Measured: <= 6.5e-14 (post_xvec), <= 2.3e-12 (post_plda) over the eight goldens.
    EXPECT_LT((post_xvec - npz_matrix(golden, "post_xvec")).cwiseAbs().maxCoeff(), 1e-9);
    const Eigen::MatrixXd post_plda = plda.plda_transform(post_xvec);
    EXPECT_LT((post_plda - npz_matrix(golden, "post_plda")).cwiseAbs().maxCoeff(), 1e-8);
    ++checked;
  }
  EXPECT_GE(checked, 6);
}

TEST(Plda, MatchesSpeakrsPipelineFeatures) {
  PARLEY_REQUIRE_SHARED(models, "models/plda");
  PARLEY_REQUIRE_SHARED(root, "goldens/speakrs");
  const Plda plda = Plda::load(models);
  const NdArray<double> train = read_npy(root / "pipeline_train_embeddings.npy").as<double>();
  const Eigen::MatrixXd features = plda.transform(testing::to_matrix(train));
  const Eigen::MatrixXd expected =
      testing::to_matrix(read_npy(root / "pipeline_plda_features.npy").as<double>());
  EXPECT_LT((features - expected).cwiseAbs().maxCoeff(), 1e-8);  // measured 1.1e-12
  const NdArray<double> phi = read_npy(root / "pipeline_plda_phi.npy").as<double>();
  for (std::size_t i = 0; i < phi.size(); ++i) {
    EXPECT_NEAR(plda.phi()(static_cast<Eigen::Index>(i)), phi(i), 1e-9 * phi(i));
  }
}

}  // namespace
}  // namespace parley::cluster

namespace parley::cluster {
namespace {

// A small, valid PLDA (input 3, LDA 2) written as the two npz files, with one field replaced.
class DamagedPlda : public ::testing::Test {
 protected:
  void SetUp() override { restore(); }

  // Back to the intact model, before the next damage.
  void restore() {
    transform_ = {{"mean1", doubles({3}, {0.1, 0.2, 0.3})},
                  {"lda", doubles({3, 2}, {1, 0, 0, 1, 0.5, 0.5})},
                  {"mean2", doubles({2}, {0.0, 0.1})}};
    plda_ = {{"mu", doubles({2}, {0.0, 0.0})},
             {"tr", doubles({2, 2}, {1, 0.1, 0.2, 1})},
             {"psi", doubles({2}, {2.0, 0.5})}};
  }

  static NpyArray doubles(std::vector<std::size_t> shape, std::vector<double> values) {
    return NpyArray::from<double>(std::move(shape), std::span<const double>(values));
  }
  NpzArchive transform_;
  NpzArchive plda_;

  // The error that loading gives, or "" when it loads.
  std::string load_error() {
    write_npz(dir_.path() / "xvec_transform.npz", transform_);
    write_npz(dir_.path() / "plda.npz", plda_);
    try {
      Plda::load(dir_.path());
    } catch (const Error& error) {
      return error.what();
    }
    return "";
  }

  const TemporaryDirectory dir_{"parley-plda-test-"};
};

// The message names the file and the field.
#define EXPECT_REFUSED(file, field)                                       \
  do {                                                                    \
    const std::string message = load_error();                             \
    EXPECT_NE(message.find(file), std::string::npos) << message;          \
    EXPECT_NE(message.find("'" field "'"), std::string::npos) << message; \
  } while (false)

TEST_F(DamagedPlda, TheIntactModelLoads) { EXPECT_EQ(load_error(), ""); }

TEST_F(DamagedPlda, NanOrInfinityAnywhereIsRefused) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  plda_["psi"] = doubles({2}, {nan, 0.5});
  EXPECT_REFUSED("plda.npz", "psi");
  restore();
  plda_["mu"] = doubles({2}, {inf, 0.0});
  EXPECT_REFUSED("plda.npz", "mu");
  restore();
  plda_["tr"] = doubles({2, 2}, {1, 0.1, -inf, 1});
  EXPECT_REFUSED("plda.npz", "tr");
  restore();
  transform_["lda"] = doubles({3, 2}, {1, 0, nan, 1, 0.5, 0.5});
  EXPECT_REFUSED("xvec_transform.npz", "lda");
  restore();
  transform_["mean1"] = doubles({3}, {0.1, inf, 0.3});
  EXPECT_REFUSED("xvec_transform.npz", "mean1");
  restore();
  transform_["mean2"] = doubles({2}, {nan, 0.1});
  EXPECT_REFUSED("xvec_transform.npz", "mean2");
}

TEST_F(DamagedPlda, NegativeOrZeroPsiIsRefused) {
  plda_["psi"] = doubles({2}, {2.0, -0.5});
  EXPECT_REFUSED("plda.npz", "psi");
  plda_["psi"] = doubles({2}, {0.0, 0.5});
  EXPECT_REFUSED("plda.npz", "psi");
}

TEST_F(DamagedPlda, IntegersWhereFloatsBelongAreRefused) {
  const std::vector<std::int64_t> psi = {2, 1};
  plda_["psi"] = NpyArray::from<std::int64_t>({2}, std::span<const std::int64_t>(psi));
  EXPECT_REFUSED("plda.npz", "psi");
}

TEST_F(DamagedPlda, WrongShapesAreRefused) {
  plda_["psi"] = doubles({3}, {2.0, 0.5, 1.0});
  EXPECT_REFUSED("plda.npz", "psi");
  restore();
  plda_["tr"] = doubles({1, 4}, {1, 0, 0, 1});
  EXPECT_REFUSED("plda.npz", "tr");
  restore();
  transform_["mean1"] = doubles({2}, {0.1, 0.2});
  EXPECT_REFUSED("xvec_transform.npz", "mean1");
  restore();
  transform_["lda"] = doubles({6}, {1, 0, 0, 1, 0.5, 0.5});
  EXPECT_REFUSED("xvec_transform.npz", "lda");
  restore();
  plda_["mu"] = doubles({0}, {});
  EXPECT_REFUSED("plda.npz", "mu");
  restore();
  plda_["tr"] = doubles({2, 2}, {1, 2, 2, 4});  // singular: no inverse
  EXPECT_REFUSED("plda.npz", "tr");
}

}  // namespace
}  // namespace parley::cluster
