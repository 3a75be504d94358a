#pragma once
// The PLDA front end of VBx clustering, as pyannote.audio 4.0 builds it in `vbx_setup`
// (utils/vbx.py) from BUT's VBx recipe: x-vectors are centred, length-normalised, projected by
// LDA, re-centred and length-normalised again (`xvec_transform.npz`: mean1, mean2, lda), then
// rotated into the space where the PLDA within-class covariance is identity and the
// across-class covariance is diagonal (`plda.npz`: mu, tr, psi). `phi` is that diagonal.
#include <filesystem>

#include <Eigen/Dense>

namespace parley::cluster {

class Plda {
 public:
  // Reads `xvec_transform.npz` and `plda.npz` from `models_dir` (pyannote community-1's `plda/`
  // folder) and diagonalises the PLDA model.
  static Plda load(const std::filesystem::path& models_dir);

  // mean1 [input_dim], lda [input_dim, lda_dim], mean2 [lda_dim]; plda_mu [lda_dim],
  // plda_tr [lda_dim, lda_dim], plda_psi [lda_dim].
  Plda(Eigen::VectorXd mean1, Eigen::MatrixXd lda, Eigen::VectorXd mean2, Eigen::VectorXd plda_mu,
       const Eigen::MatrixXd& plda_tr, const Eigen::VectorXd& plda_psi);

  // Rows are embeddings [n, input_dim] → [n, lda_dim]: pyannote's `_xvec_tf` (post_xvec).
  Eigen::MatrixXd xvec_transform(const Eigen::MatrixXd& embeddings) const;
  // Rows are xvec_transform outputs [n, lda_dim] → PLDA features [n, lda_dim]: `_plda_tf`.
  Eigen::MatrixXd plda_transform(const Eigen::MatrixXd& xvecs) const;
  // Both steps: pyannote's `PLDA.__call__` (post_plda, the features VBx clusters).
  Eigen::MatrixXd transform(const Eigen::MatrixXd& embeddings) const;

  // Across-class variances in the PLDA space, largest first ([lda_dim]).
  const Eigen::VectorXd& phi() const { return phi_; }
  Eigen::Index input_dimension() const { return lda_.rows(); }

 private:
  Eigen::VectorXd mean1_;
  Eigen::MatrixXd lda_;
  Eigen::VectorXd mean2_;
  Eigen::VectorXd plda_mu_;
  // Rows are the generalised eigenvectors of (B, W), largest eigenvalue first (LAPACK's signs).
  Eigen::MatrixXd rotation_;
  Eigen::VectorXd phi_;
};

}  // namespace parley::cluster
