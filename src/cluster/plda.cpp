#include "cluster/plda.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/npz.h"

namespace parley::cluster {
namespace {

// The array `key` of a PLDA file as doubles, refused unless it is floating-point, of `rank`
// dimensions, not empty and finite: a damaged file must stop the run, not skew the clustering.
NdArray<double> checked_values(const NpzArchive& archive, const std::string& key, std::size_t rank,
                               const std::filesystem::path& source) {
  const NpyArray& stored = npz_get(archive, key, source);
  if (stored.type != NpyType::kFloat32 && stored.type != NpyType::kFloat64) {
    fail(
        "{}: '{}' holds integers or booleans, not floating-point numbers; the PLDA file is "
        "damaged, download it again",
        source.string(), key);
  }
  NdArray<double> values = stored.as<double>();
  if (values.rank() != rank) {
    fail("{}: '{}' has rank {} ({} expected); the PLDA file is damaged, download it again",
         source.string(), key, values.rank(), rank == 1 ? "a vector was" : "a matrix was");
  }
  if (values.size() == 0) {
    fail("{}: '{}' is empty; the PLDA file is damaged, download it again", source.string(), key);
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values.data()[i])) {
      fail(
          "{}: '{}' holds a NaN or infinite value (element {}); the PLDA file is damaged, "
          "download it again",
          source.string(), key, i);
    }
  }
  return values;
}

Eigen::VectorXd vector_from(const NpzArchive& archive, const std::string& key,
                            const std::filesystem::path& source) {
  const NdArray<double> values = checked_values(archive, key, 1, source);
  return Eigen::Map<const Eigen::VectorXd>(values.data(), static_cast<Eigen::Index>(values.size()));
}

Eigen::MatrixXd matrix_from(const NpzArchive& archive, const std::string& key,
                            const std::filesystem::path& source) {
  const NdArray<double> values = checked_values(archive, key, 2, source);
  using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  return Eigen::Map<const RowMajor>(values.data(), static_cast<Eigen::Index>(values.dim(0)),
                                    static_cast<Eigen::Index>(values.dim(1)));
}

// Fails naming the file and the field when `field` does not have the size `expected`.
void require_size(Eigen::Index size, Eigen::Index expected, const std::string& field,
                  const std::string& what, const std::filesystem::path& source) {
  if (size != expected) {
    fail(
        "{}: '{}' has {} {}, {} expected to match the other PLDA arrays; use the "
        "xvec_transform.npz and plda.npz shipped together with community-1",
        source.string(), field, size, what, expected);
  }
}

extern "C" void dsygvd_(const int* itype, const char* jobz, const char* uplo, const int* n,
                        double* a, const int* lda, double* b, const int* ldb, double* w,
                        double* work, const int* lwork, int* iwork, const int* liwork, int* info,
                        std::size_t jobz_length, std::size_t uplo_length);

// scipy.linalg.eigh(a, b): LAPACK dsygvd (itype 1, lower triangles), eigenvectors as columns,
// eigenvalues ascending. Calling the same LAPACK routine as scipy matters for more than speed:
// an eigenvector's sign is arbitrary, and only the same algorithm reproduces pyannote's signs,
// so that the PLDA features equal pyannote's exactly (VBx itself is sign-invariant).
Eigen::MatrixXd generalized_symmetric_eigenvectors(const Eigen::MatrixXd& a,
                                                   const Eigen::MatrixXd& b,
                                                   Eigen::VectorXd& eigenvalues) {
  const int n = static_cast<int>(a.rows());
  Eigen::MatrixXd vectors = a;  // column-major, as LAPACK expects; overwritten with the result
  Eigen::MatrixXd b_factor = b;
  eigenvalues.resize(n);
  const int itype = 1;
  int info = 0;
  int work_query_size = -1;
  double work_size = 0.0;
  int iwork_size = 0;
  dsygvd_(&itype, "V", "L", &n, vectors.data(), &n, b_factor.data(), &n, eigenvalues.data(),
          &work_size, &work_query_size, &iwork_size, &work_query_size, &info, 1, 1);
  const int lwork = static_cast<int>(work_size);
  const int liwork = iwork_size;
  std::vector<double> work(static_cast<std::size_t>(std::max(1, lwork)));
  std::vector<int> iwork(static_cast<std::size_t>(std::max(1, liwork)));
  if (info == 0) {
    dsygvd_(&itype, "V", "L", &n, vectors.data(), &n, b_factor.data(), &n, eigenvalues.data(),
            work.data(), &lwork, iwork.data(), &liwork, &info, 1, 1);
  }
  if (info != 0) {
    fail(
        "PLDA model: the generalised eigenproblem failed (LAPACK dsygvd info {}); the plda.npz "
        "file is damaged, download it again",
        info);
  }
  return vectors;
}

// Row-wise division by the Euclidean norm (pyannote's `l2_norm`); a zero row becomes NaN there
// too, which later stages reject.
Eigen::MatrixXd l2_normalise_rows(Eigen::MatrixXd rows) {
  for (Eigen::Index row = 0; row < rows.rows(); ++row) {
    rows.row(row) /= rows.row(row).norm();
  }
  return rows;
}

}  // namespace

Plda Plda::load(const std::filesystem::path& models_dir) {
  const std::filesystem::path transform_path = models_dir / "xvec_transform.npz";
  const std::filesystem::path plda_path = models_dir / "plda.npz";
  for (const auto& path : {transform_path, plda_path}) {
    if (!std::filesystem::exists(path)) {
      fail(
          "{}: PLDA model file not found; put pyannote community-1's plda/xvec_transform.npz and "
          "plda/plda.npz in that folder (or pass the folder that holds them)",
          path.string());
    }
  }
  const NpzArchive transform = read_npz(transform_path);
  const NpzArchive plda = read_npz(plda_path);
  Eigen::VectorXd mean1 = vector_from(transform, "mean1", transform_path);
  Eigen::MatrixXd lda = matrix_from(transform, "lda", transform_path);
  Eigen::VectorXd mean2 = vector_from(transform, "mean2", transform_path);
  Eigen::VectorXd mu = vector_from(plda, "mu", plda_path);
  const Eigen::MatrixXd tr = matrix_from(plda, "tr", plda_path);
  const Eigen::VectorXd psi = vector_from(plda, "psi", plda_path);
  const Eigen::Index lda_dim = lda.cols();
  require_size(mean1.size(), lda.rows(), "mean1", "values (lda's rows)", transform_path);
  require_size(mean2.size(), lda_dim, "mean2", "values (lda's columns)", transform_path);
  require_size(mu.size(), lda_dim, "mu", "values (lda's columns)", plda_path);
  require_size(tr.rows(), lda_dim, "tr", "rows (lda's columns)", plda_path);
  require_size(tr.cols(), lda_dim, "tr", "columns (lda's columns)", plda_path);
  require_size(psi.size(), lda_dim, "psi", "values (lda's columns)", plda_path);
  // psi holds across-class variances: pyannote divides by them.
  for (Eigen::Index i = 0; i < psi.size(); ++i) {
    if (!(psi[i] > 0.0)) {
      fail(
          "{}: 'psi' must hold positive variances, element {} is {}; the PLDA file is damaged, "
          "download it again",
          plda_path.string(), i, psi[i]);
    }
  }
  if (tr.fullPivLu().rank() < lda_dim) {
    fail(
        "{}: 'tr' is singular (it cannot be inverted); the PLDA file is damaged, download it again",
        plda_path.string());
  }
  return Plda(std::move(mean1), std::move(lda), std::move(mean2), std::move(mu), tr, psi);
}

Plda::Plda(Eigen::VectorXd mean1, Eigen::MatrixXd lda, Eigen::VectorXd mean2,
           Eigen::VectorXd plda_mu, const Eigen::MatrixXd& plda_tr, const Eigen::VectorXd& plda_psi)
    : mean1_(std::move(mean1)),
      lda_(std::move(lda)),
      mean2_(std::move(mean2)),
      plda_mu_(std::move(plda_mu)) {
  const Eigen::Index lda_dim = lda_.cols();
  if (mean1_.size() != lda_.rows() || mean2_.size() != lda_dim || plda_mu_.size() != lda_dim ||
      plda_tr.rows() != lda_dim || plda_tr.cols() != lda_dim || plda_psi.size() != lda_dim) {
    fail(
        "PLDA model: inconsistent shapes (mean1 {}, lda {}x{}, mean2 {}, mu {}, tr {}x{}, psi {}); "
        "use the xvec_transform.npz and plda.npz shipped together with community-1",
        mean1_.size(), lda_.rows(), lda_.cols(), mean2_.size(), plda_mu_.size(), plda_tr.rows(),
        plda_tr.cols(), plda_psi.size());
  }
  // Within- and across-class covariances of the stored model, then the generalised symmetric
  // eigenproblem B v = λ W v, eigenvectors normalised to v'Wv = 1.
  const Eigen::MatrixXd within = (plda_tr.transpose() * plda_tr).inverse();
  const Eigen::MatrixXd across =
      (plda_tr.transpose() * plda_psi.cwiseInverse().asDiagonal() * plda_tr).inverse();
  Eigen::VectorXd eigenvalues;
  const Eigen::MatrixXd eigenvectors =
      generalized_symmetric_eigenvectors(across, within, eigenvalues);
  // LAPACK returns ascending eigenvalues; pyannote reverses them (largest first).
  phi_ = eigenvalues.reverse();
  rotation_ = eigenvectors.rowwise().reverse().transpose();
  if (!phi_.allFinite() || !rotation_.allFinite()) {
    fail(
        "PLDA model: diagonalising plda.npz gave NaN or infinite values; the PLDA file is "
        "damaged, download it again");
  }
}

Eigen::MatrixXd Plda::xvec_transform(const Eigen::MatrixXd& embeddings) const {
  if (embeddings.cols() != lda_.rows()) {
    fail(
        "PLDA: embeddings have {} dimensions but the x-vector transform expects {}; use the "
        "WeSpeaker ResNet34-LM embedding model that community-1 pairs with this PLDA",
        embeddings.cols(), lda_.rows());
  }
  const double input_scale = std::sqrt(static_cast<double>(lda_.rows()));
  const double output_scale = std::sqrt(static_cast<double>(lda_.cols()));
  Eigen::MatrixXd centred = embeddings.rowwise() - mean1_.transpose();
  Eigen::MatrixXd projected = (input_scale * l2_normalise_rows(std::move(centred))) * lda_;
  projected.rowwise() -= mean2_.transpose();
  return output_scale * l2_normalise_rows(std::move(projected));
}

Eigen::MatrixXd Plda::plda_transform(const Eigen::MatrixXd& xvecs) const {
  return (xvecs.rowwise() - plda_mu_.transpose()) * rotation_.transpose();
}

Eigen::MatrixXd Plda::transform(const Eigen::MatrixXd& embeddings) const {
  return plda_transform(xvec_transform(embeddings));
}

}  // namespace parley::cluster
