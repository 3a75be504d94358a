#include "cluster/vbx.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include <fmt/format.h>

#include "core/error.h"
#include "core/parallel_for.h"

namespace parley::cluster {

void VbxConfig::validate() const {
  if (!(fa > 0.0) || !std::isfinite(fa)) fail("VBx: Fa must be positive (got {})", fa);
  if (!(fb > 0.0) || !std::isfinite(fb)) fail("VBx: Fb must be positive (got {})", fb);
  if (max_iterations < 1) fail("VBx: max iterations must be at least 1 (got {})", max_iterations);
  if (!(epsilon >= 0.0)) fail("VBx: epsilon must be >= 0 (got {})", epsilon);
}

std::string VbxConfig::describe() const {
  return fmt::format("VBx(Fa={}, Fb={}, max_iters={}, epsilon={}, init_smoothing={})", fa, fb,
                     max_iterations, epsilon, init_smoothing);
}

VbxResult cluster_vbx(const Eigen::MatrixXd& features, const Eigen::VectorXd& phi,
                      const std::vector<int>& initial_labels, const VbxConfig& config) {
  config.validate();
  const Eigen::Index frame_count = features.rows();
  const Eigen::Index dimension = features.cols();
  if (phi.size() != dimension) {
    fail("VBx: features have {} dimensions but phi has {}", dimension, phi.size());
  }
  if (static_cast<Eigen::Index>(initial_labels.size()) != frame_count || frame_count == 0) {
    fail("VBx: {} initial labels for {} feature rows", initial_labels.size(), frame_count);
  }
  const int cluster_count = *std::max_element(initial_labels.begin(), initial_labels.end()) + 1;
  if (*std::min_element(initial_labels.begin(), initial_labels.end()) < 0) {
    fail("VBx: initial labels must be >= 0");
  }

  VbxResult result;
  // softmax(one_hot * smoothing) per row: the own cluster gets exp(0), the others
  // exp(-smoothing), as scipy.special.softmax computes it (shifted by the row maximum).
  Eigen::MatrixXd gamma = Eigen::MatrixXd::Zero(frame_count, cluster_count);
  if (config.init_smoothing < 0) {
    for (Eigen::Index t = 0; t < frame_count; ++t) gamma(t, initial_labels[t]) = 1.0;
  } else {
    const double other = std::exp(-config.init_smoothing);
    const double total = 1.0 + other * static_cast<double>(cluster_count - 1);
    gamma.setConstant(other / total);
    for (Eigen::Index t = 0; t < frame_count; ++t) gamma(t, initial_labels[t]) = 1.0 / total;
  }
  result.initial_responsibilities = gamma;

  Eigen::VectorXd pi = Eigen::VectorXd::Constant(cluster_count, 1.0 / cluster_count);
  // Per-frame constant of the log-likelihood and features scaled by sqrt(phi) (paper eq. 18, 23).
  const Eigen::VectorXd frame_constant =
      -0.5 * (features.rowwise().squaredNorm().array() +
              static_cast<double>(dimension) * std::log(2.0 * std::numbers::pi))
                 .matrix();
  const Eigen::MatrixXd rho = features * phi.cwiseSqrt().asDiagonal();
  const double fa_over_fb = config.fa / config.fb;

  // Ranges of frames for the per-frame part of each iteration (exp on every frame and cluster),
  // one per thread where there is enough of it to share.
  const std::size_t frame_ranges =
      frame_count * cluster_count < 100000 ? 1 : static_cast<std::size_t>(hardware_threads(8));

  Eigen::MatrixXd inv_l(cluster_count, dimension);
  Eigen::MatrixXd alpha(cluster_count, dimension);
  for (int iteration = 0; iteration < config.max_iterations; ++iteration) {
    // Speaker model posteriors (eq. 16, 17).
    const Eigen::VectorXd counts = gamma.colwise().sum().transpose();
    for (Eigen::Index s = 0; s < cluster_count; ++s) {
      inv_l.row(s) = (1.0 + (fa_over_fb * counts(s)) * phi.array()).inverse().transpose();
    }
    alpha = fa_over_fb * inv_l.cwiseProduct(gamma.transpose() * rho);
    // Log-likelihood of each frame under each speaker (eq. 23).
    const Eigen::VectorXd model_term = (inv_l + alpha.cwiseAbs2()) * phi;
    Eigen::MatrixXd log_p = rho * alpha.transpose();
    log_p.rowwise() -= 0.5 * model_term.transpose();
    log_p.colwise() += frame_constant;
    log_p *= config.fa;

    const Eigen::RowVectorXd log_pi = (pi.array() + 1e-8).log().matrix().transpose();
    log_p.rowwise() += log_pi;
    // Per frame, logsumexp over speakers in its accurate form: max + log1p(sum of the others'
    // exp(x - max)), the first maximum as Eigen's maxCoeff picks it; then the responsibilities.
    // The matrices are stored by column, so each range of frames walks the columns with its
    // frames side by side; every frame's sums still run over the speakers in order, and
    // std::exp is called on each element (Eigen's vectorised exp would round differently), so
    // neither the layout nor the ranges (one per thread) change a value.
    Eigen::VectorXd log_marginal(frame_count);
    parallel_for(frame_ranges, static_cast<int>(frame_ranges), [&](std::size_t range) {
      const Eigen::Index first =
          frame_count * static_cast<Eigen::Index>(range) / static_cast<Eigen::Index>(frame_ranges);
      const Eigen::Index last = frame_count * static_cast<Eigen::Index>(range + 1) /
                                static_cast<Eigen::Index>(frame_ranges);
      const Eigen::Index size = last - first;
      Eigen::VectorXd row_max = log_p.col(0).segment(first, size);
      std::vector<Eigen::Index> arg_max(static_cast<std::size_t>(size), 0);
      for (Eigen::Index s = 1; s < cluster_count; ++s) {
        for (Eigen::Index i = 0; i < size; ++i) {
          if (log_p(first + i, s) > row_max(i)) {
            row_max(i) = log_p(first + i, s);
            arg_max[static_cast<std::size_t>(i)] = s;
          }
        }
      }
      Eigen::VectorXd others = Eigen::VectorXd::Zero(size);
      for (Eigen::Index s = 0; s < cluster_count; ++s) {
        for (Eigen::Index i = 0; i < size; ++i) {
          if (s != arg_max[static_cast<std::size_t>(i)]) {
            others(i) += std::exp(log_p(first + i, s) - row_max(i));
          }
        }
      }
      for (Eigen::Index i = 0; i < size; ++i) {
        log_marginal(first + i) = row_max(i) + std::log1p(others(i));
      }
      for (Eigen::Index s = 0; s < cluster_count; ++s) {
        for (Eigen::Index t = first; t < last; ++t) {
          gamma(t, s) = std::exp(log_p(t, s) - log_marginal(t));
        }
      }
    });
    double total_log_likelihood = 0.0;
    for (Eigen::Index t = 0; t < frame_count; ++t) total_log_likelihood += log_marginal(t);
    pi = gamma.colwise().sum().transpose();
    pi /= pi.sum();

    const double elbo =
        total_log_likelihood +
        config.fb * 0.5 *
            (inv_l.array().log() - inv_l.array() - alpha.array().square() + 1.0).sum();
    result.elbo.push_back(elbo);
    if (iteration > 0 && elbo - result.elbo[result.elbo.size() - 2] < config.epsilon) break;
  }
  result.responsibilities = std::move(gamma);
  result.speaker_priors = std::move(pi);
  return result;
}

}  // namespace parley::cluster
