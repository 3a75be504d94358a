#include "cluster/vbx_clustering.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cluster/assignment.h"
#include "cluster/kmeans.h"
#include "cluster/scipy_linkage.h"
#include "core/error.h"
#include "core/parallel_for.h"

#include "core/text.h"

namespace parley::cluster {

void VbxClusteringConfig::validate() const {
  if (!(threshold > 0.0) || !std::isfinite(threshold)) {
    fail("clustering threshold must be positive (got {})", threshold);
  }
  if (!(min_active_ratio >= 0.0 && min_active_ratio <= 1.0)) {
    fail("min active ratio must lie in [0, 1] (got {})", min_active_ratio);
  }
  if (!(min_speaker_prior >= 0.0 && min_speaker_prior < 1.0)) {
    fail("min speaker prior must lie in [0, 1) (got {})", min_speaker_prior);
  }
  vbx.validate();
}

std::string VbxClusteringConfig::describe() const {
  return fmt::format(
      "VBxClustering(threshold={}, {}, min_active_ratio={}, min_speaker_prior={}, "
      "constrained_assignment={}, max_ahc_embeddings={})",
      threshold, vbx.describe(), min_active_ratio, min_speaker_prior, constrained_assignment,
      max_ahc_embeddings);
}

std::vector<int> ahc_initial_labels(const Eigen::MatrixXd& normalised, double threshold,
                                    std::size_t max_embeddings) {
  const auto count = static_cast<std::size_t>(normalised.rows());
  const std::size_t stride = max_embeddings == 0 || count <= max_embeddings
                                 ? 1
                                 : (count + max_embeddings - 1) / max_embeddings;
  if (stride == 1) {
    const Dendrogram dendrogram = linkage(condensed_euclidean_distances(normalised),
                                          static_cast<int>(count), LinkageMethod::kCentroid);
    // fcluster numbers clusters 1..K consecutively, so numpy.unique's relabelling is the
    // identity.
    return fcluster_distance(dendrogram, threshold);
  }
  const auto sampled_count = static_cast<Eigen::Index>((count + stride - 1) / stride);
  Eigen::MatrixXd sampled(sampled_count, normalised.cols());
  for (Eigen::Index i = 0; i < sampled_count; ++i) {
    sampled.row(i) = normalised.row(i * static_cast<Eigen::Index>(stride));
  }
  spdlog::debug(
      "clustering: {} embeddings; AHC initialisation on every {}th ({}), the others joined to "
      "the nearest of its clusters (max_ahc_embeddings {})",
      count, stride, sampled_count, max_embeddings);
  const std::vector<int> sampled_labels =
      fcluster_distance(linkage(condensed_euclidean_distances(sampled),
                                static_cast<int>(sampled_count), LinkageMethod::kCentroid),
                        threshold);
  const int clusters = 1 + *std::max_element(sampled_labels.begin(), sampled_labels.end());
  Eigen::MatrixXd centroids = Eigen::MatrixXd::Zero(clusters, normalised.cols());
  Eigen::VectorXd sizes = Eigen::VectorXd::Zero(clusters);
  for (Eigen::Index i = 0; i < sampled_count; ++i) {
    centroids.row(sampled_labels[i]) += sampled.row(i);
    sizes(sampled_labels[i]) += 1.0;
  }
  centroids.array().colwise() /= sizes.array();
  // Every other embedding joins the nearest centroid (squared Euclidean distance, the first on
  // ties). The centroids are stored by column, so the sums walk the dimensions with all clusters
  // side by side; each cluster's sum still adds the dimensions in order, as Eigen's
  // rowwise().squaredNorm() does, so the choice is the same. Rows are independent: split over
  // threads.
  std::vector<int> labels(count);
  const auto parts = static_cast<std::size_t>(
      count * static_cast<std::size_t>(clusters) < 100000 ? 1 : hardware_threads(8));
  parallel_for(parts, static_cast<int>(parts), [&](std::size_t part) {
    std::vector<double> sums(static_cast<std::size_t>(clusters));
    for (std::size_t row = count * part / parts; row < count * (part + 1) / parts; ++row) {
      if (row % stride == 0) {
        labels[row] = sampled_labels[row / stride];
        continue;
      }
      std::fill(sums.begin(), sums.end(), 0.0);
      for (Eigen::Index d = 0; d < normalised.cols(); ++d) {
        const double value = normalised(static_cast<Eigen::Index>(row), d);
        const double* column = centroids.col(d).data();
        for (std::size_t k = 0; k < sums.size(); ++k) {
          const double difference = column[k] - value;
          sums[k] += difference * difference;
        }
      }
      labels[row] = static_cast<int>(std::min_element(sums.begin(), sums.end()) - sums.begin());
    }
  });
  return labels;
}

ClusteringResult cluster_embeddings_vbx(const NdArray<float>& embeddings,
                                        const NdArray<float>& segmentations, const Plda& plda,
                                        const VbxClusteringConfig& config,
                                        const SpeakerCountConstraints& constraints) {
  config.validate();
  constraints.validate();
  TrainingSet training =
      select_training_embeddings(embeddings, segmentations, config.min_active_ratio);
  const std::size_t chunk_count = embeddings.dim(0);
  const std::size_t speaker_count = embeddings.dim(1);
  const auto dimension = static_cast<Eigen::Index>(embeddings.dim(2));

  ClusteringResult result = clustering_result_for(training, config.threshold);
  ClusteringIntermediates& steps = result.intermediates;
  steps.vbx_config = config.vbx;

  if (training.size() < 2) {
    // Too little to cluster: everyone is one speaker (pyannote's early exit; with no training
    // embedding at all the centroid is NaN there too).
    spdlog::warn("clustering: only {}; assigning every speaker to one cluster",
                 counted(training.size(), "usable embedding"));
    result.hard_clusters = NdArray<int>({chunk_count, speaker_count}, 0);
    result.soft_clusters = NdArray<double>({chunk_count, speaker_count, 1}, 1.0);
    Eigen::MatrixXd centroid =
        training.size() == 0
            ? Eigen::MatrixXd::Constant(1, dimension, std::numeric_limits<double>::quiet_NaN())
            : Eigen::MatrixXd(training.embeddings.colwise().mean());
    result.centroids = to_ndarray(centroid);
    return result;
  }

  // AHC initialisation on unit-length embeddings. The widened training embeddings are let go
  // while its pairwise distances exist and read again after: at ten hours they, their
  // normalised copy and the distances would be 73, 73 and 150 MB at once, the peak of a long
  // recording's clustering (docs/corpus.md, "Memory").
  {
    Eigen::MatrixXd normalised = normalise_rows_like_float32(training.embeddings);
    training.embeddings = Eigen::MatrixXd();
    steps.ahc_labels = ahc_initial_labels(normalised, config.threshold, config.max_ahc_embeddings);
  }
  widen_training_embeddings(embeddings, training);

  // VBx on PLDA features.
  steps.post_xvec = plda.xvec_transform(training.embeddings);
  steps.post_plda = plda.plda_transform(steps.post_xvec);
  steps.phi = plda.phi();
  steps.vbx = cluster_vbx(steps.post_plda, steps.phi, steps.ahc_labels, config.vbx);

  std::vector<Eigen::Index> kept;
  for (Eigen::Index k = 0; k < steps.vbx->speaker_priors.size(); ++k) {
    if (steps.vbx->speaker_priors(k) > config.min_speaker_prior) kept.push_back(k);
  }
  Eigen::MatrixXd weights(steps.vbx->responsibilities.rows(),
                          static_cast<Eigen::Index>(kept.size()));
  for (std::size_t k = 0; k < kept.size(); ++k) {
    weights.col(static_cast<Eigen::Index>(k)) = steps.vbx->responsibilities.col(kept[k]);
  }
  Eigen::MatrixXd centroids = weights.transpose() * training.embeddings;
  centroids.array().colwise() /= weights.colwise().sum().transpose().array();

  // Speaker-count constraints: fall back to k-means when VBx's count is out of bounds.
  const auto auto_count = static_cast<int>(centroids.rows());
  std::optional<int> wanted = constraints.resolved_num();
  const std::optional<int> max_count = constraints.resolved_max();
  if (auto_count < constraints.resolved_min()) {
    wanted = constraints.resolved_min();
  } else if (max_count && auto_count > *max_count) {
    wanted = *max_count;
  }
  bool constrained = config.constrained_assignment;
  if (wanted && *wanted != auto_count) {
    constrained = false;  // as pyannote: it could otherwise inflate the number of clusters
    int cluster_count = *wanted;
    if (static_cast<std::size_t>(cluster_count) > training.size()) {
      // scikit-learn would raise here; we cluster as finely as the data allows instead.
      spdlog::warn("clustering: {} speakers requested but only {} usable embeddings; using {}",
                   cluster_count, training.size(), training.size());
      cluster_count = static_cast<int>(training.size());
    }
    KMeansConfig kmeans;
    kmeans.cluster_count = cluster_count;
    const std::vector<int> labels =
        kmeans_fit_predict(normalise_rows_like_float32(training.embeddings), kmeans);
    centroids = Eigen::MatrixXd::Zero(cluster_count, dimension);
    Eigen::VectorXd counts = Eigen::VectorXd::Zero(cluster_count);
    for (std::size_t row = 0; row < labels.size(); ++row) {
      centroids.row(labels[row]) += training.embeddings.row(static_cast<Eigen::Index>(row));
      counts(labels[row]) += 1.0;
    }
    centroids.array().colwise() /= counts.array();
    steps.used_kmeans = true;
  }

  result.soft_clusters = centroid_similarities(embeddings, centroids);
  result.hard_clusters = constrained ? assign_inactive_last(result.soft_clusters, segmentations)
                                     : unconstrained_argmax(result.soft_clusters);
  result.centroids = to_ndarray(centroids);
  return result;
}

}  // namespace parley::cluster
