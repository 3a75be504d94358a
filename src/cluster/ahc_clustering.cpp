#include "cluster/ahc_clustering.h"

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cluster/assignment.h"
#include "cluster/scipy_linkage.h"
#include "core/error.h"

namespace parley::cluster {
namespace {

struct ClusterSizes {
  std::vector<int> labels;  // sorted distinct labels (numpy.unique)
  std::vector<int> counts;
  int large_count(int min_cluster_size) const {
    return static_cast<int>(
        std::count_if(counts.begin(), counts.end(), [&](int c) { return c >= min_cluster_size; }));
  }
};

ClusterSizes cluster_sizes(const std::vector<int>& clusters) {
  std::map<int, int> counts;
  for (const int label : clusters) ++counts[label];
  ClusterSizes sizes;
  for (const auto& [label, count] : counts) {
    sizes.labels.push_back(label);
    sizes.counts.push_back(count);
  }
  return sizes;
}

Eigen::RowVectorXd mean_of(const Eigen::MatrixXd& rows, const std::vector<int>& clusters,
                           int label) {
  Eigen::RowVectorXd sum = Eigen::RowVectorXd::Zero(rows.cols());
  double count = 0.0;
  for (std::size_t i = 0; i < clusters.size(); ++i) {
    if (clusters[i] == label) {
      sum += rows.row(static_cast<Eigen::Index>(i));
      count += 1.0;
    }
  }
  return sum / count;
}

double cosine_distance(const Eigen::RowVectorXd& a, const Eigen::RowVectorXd& b) {
  double cosine = a.dot(b) / (a.norm() * b.norm());
  if (std::abs(cosine) > 1.0) cosine = std::copysign(1.0, cosine);
  return 1.0 - cosine;
}

// pyannote's AgglomerativeClustering.cluster on already normalised embeddings.
std::vector<int> agglomerative_labels(const Eigen::MatrixXd& normalised, LinkageMethod method,
                                      double threshold, int configured_min_cluster_size,
                                      int min_clusters, int max_clusters,
                                      std::optional<int> num_clusters) {
  const auto count = static_cast<int>(normalised.rows());
  // Python's round() (ties to even) of 10 % of the embeddings, at least 1.
  const int min_cluster_size =
      std::min(configured_min_cluster_size,
               std::max(1, static_cast<int>(std::nearbyint(0.1 * static_cast<double>(count)))));
  if (count == 1) return {0};

  // Centroid-type methods need Euclidean distances; on unit vectors they track cosine distance.
  const bool euclidean = method == LinkageMethod::kCentroid || method == LinkageMethod::kMedian;
  Dendrogram dendrogram = linkage(euclidean ? condensed_euclidean_distances(normalised)
                                            : condensed_cosine_distances(normalised),
                                  count, method);
  std::vector<int> clusters = fcluster_distance(dendrogram, threshold);
  ClusterSizes sizes = cluster_sizes(clusters);
  int large_count = sizes.large_count(min_cluster_size);

  if (large_count < min_clusters) {
    num_clusters = min_clusters;
  } else if (large_count > max_clusters) {
    num_clusters = max_clusters;
  }
  if (num_clusters && large_count != *num_clusters) {
    // Walk the dendrogram from the merges nearest the threshold outwards, cutting by merge
    // index instead of distance, until the number of large clusters is the one wanted.
    Dendrogram by_index = dendrogram;
    for (std::size_t k = 0; k < by_index.size(); ++k) by_index[k].distance = static_cast<double>(k);
    std::vector<int> order(by_index.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return std::abs(dendrogram[a].distance - threshold) <
             std::abs(dendrogram[b].distance - threshold);
    });
    int best_iteration = count - 1;
    int best_large_count = 1;
    for (const int iteration : order) {
      if (by_index[iteration].size < min_cluster_size) continue;
      clusters = fcluster_distance(by_index, static_cast<double>(iteration));
      sizes = cluster_sizes(clusters);
      large_count = sizes.large_count(min_cluster_size);
      if (std::abs(large_count - *num_clusters) < std::abs(best_large_count - *num_clusters)) {
        best_iteration = iteration;
        best_large_count = large_count;
      }
      if (large_count == *num_clusters) break;
    }
    if (best_large_count != *num_clusters) {
      clusters = fcluster_distance(by_index, static_cast<double>(best_iteration));
      sizes = cluster_sizes(clusters);
      large_count = sizes.large_count(min_cluster_size);
      spdlog::warn(
          "clustering: found only {} clusters; a smaller minimum cluster size than {} "
          "might help",
          large_count, min_cluster_size);
    }
  }
  if (large_count == 0) return std::vector<int>(clusters.size(), 0);

  std::vector<int> large;
  std::vector<int> small;
  for (std::size_t i = 0; i < sizes.labels.size(); ++i) {
    (sizes.counts[i] >= min_cluster_size ? large : small).push_back(sizes.labels[i]);
  }
  if (small.empty()) return clusters;
  // Merge each small cluster into the large cluster with the most similar centroid.
  std::vector<Eigen::RowVectorXd> large_centroids;
  for (const int label : large) large_centroids.push_back(mean_of(normalised, clusters, label));
  std::map<int, int> destination;
  for (const int label : small) {
    const Eigen::RowVectorXd centroid = mean_of(normalised, clusters, label);
    std::size_t best = 0;
    double best_distance = std::numeric_limits<double>::infinity();
    for (std::size_t k = 0; k < large.size(); ++k) {
      const double distance = cosine_distance(large_centroids[k], centroid);
      if (distance < best_distance) {
        best_distance = distance;
        best = k;
      }
    }
    destination[label] = large[best];
  }
  for (int& label : clusters) {
    if (const auto found = destination.find(label); found != destination.end()) {
      label = found->second;
    }
  }
  // Renumber 0..K-1 in label order (numpy.unique's return_inverse).
  std::map<int, int> renumbered;
  for (const int label : large) renumbered.emplace(label, static_cast<int>(renumbered.size()));
  for (int& label : clusters) label = renumbered.at(label);
  return clusters;
}

}  // namespace

void AhcClusteringConfig::validate() const {
  if (!(threshold > 0.0) || !std::isfinite(threshold)) {
    fail("AHC threshold must be positive (got {})", threshold);
  }
  if (!(long_recording_threshold > 0.0) || !std::isfinite(long_recording_threshold)) {
    fail("AHC long-recording threshold must be positive (got {})", long_recording_threshold);
  }
  if (min_cluster_size < 1)
    fail("AHC minimum cluster size must be >= 1 (got {})", min_cluster_size);
  if (!(min_active_ratio >= 0.0 && min_active_ratio <= 1.0)) {
    fail("min active ratio must lie in [0, 1] (got {})", min_active_ratio);
  }
}

std::string AhcClusteringConfig::describe() const {
  return fmt::format(
      "AgglomerativeClustering(linkage={}, threshold={}, adaptive={} (>{} s and >={} "
      "segments: {}), min_cluster_size={}, min_active_ratio={}, constrained_assignment={})",
      to_string(linkage), threshold, adaptive_threshold, long_recording_min_duration_s,
      long_recording_min_segments, long_recording_threshold, min_cluster_size, min_active_ratio,
      constrained_assignment);
}

double AhcClusteringConfig::threshold_for(double duration_s, std::size_t segment_count) const {
  if (adaptive_threshold && duration_s > long_recording_min_duration_s &&
      segment_count >= long_recording_min_segments) {
    return long_recording_threshold;
  }
  return threshold;
}

ClusteringResult cluster_embeddings_ahc(const NdArray<float>& embeddings,
                                        const NdArray<float>& segmentations,
                                        const AhcClusteringConfig& config,
                                        const SpeakerCountConstraints& constraints,
                                        double recording_duration_s) {
  config.validate();
  constraints.validate();
  const TrainingSet training =
      select_training_embeddings(embeddings, segmentations, config.min_active_ratio);
  const std::size_t chunk_count = embeddings.dim(0);
  const std::size_t speaker_count = embeddings.dim(1);
  const auto dimension = static_cast<Eigen::Index>(embeddings.dim(2));

  ClusteringResult result =
      clustering_result_for(training, config.threshold_for(recording_duration_s, training.size()));
  ClusteringIntermediates& steps = result.intermediates;

  // BaseClustering.set_num_clusters: bounds clipped to the number of training embeddings.
  const auto train_count = static_cast<int>(training.size());
  const int min_clusters = std::max(1, std::min(train_count, constraints.resolved_min()));
  const int max_clusters =
      std::max(1, std::min(train_count, constraints.resolved_max().value_or(train_count)));
  if (min_clusters > max_clusters) {
    fail("clustering: at least {} speakers requested but only {} usable embeddings", min_clusters,
         train_count);
  }
  std::optional<int> num_clusters = constraints.resolved_num();
  if (min_clusters == max_clusters) num_clusters = min_clusters;

  Eigen::MatrixXd centroids;
  if (max_clusters < 2) {
    spdlog::debug("clustering: at most one speaker possible; skipping AHC");
    result.hard_clusters = NdArray<int>({chunk_count, speaker_count}, 0);
    result.soft_clusters = NdArray<double>({chunk_count, speaker_count, 1}, 1.0);
    centroids = training.size() == 0 ? Eigen::MatrixXd::Constant(
                                           1, dimension, std::numeric_limits<double>::quiet_NaN())
                                     : Eigen::MatrixXd(training.embeddings.colwise().mean());
  } else {
    const Eigen::MatrixXd normalised = normalise_rows_like_float32(training.embeddings);
    steps.ahc_labels =
        agglomerative_labels(normalised, config.linkage, steps.threshold, config.min_cluster_size,
                             min_clusters, max_clusters, num_clusters);
    // BaseClustering.assign_embeddings: centroids are means of the raw training embeddings.
    const int cluster_count =
        *std::max_element(steps.ahc_labels.begin(), steps.ahc_labels.end()) + 1;
    centroids.resize(cluster_count, dimension);
    for (int k = 0; k < cluster_count; ++k) {
      centroids.row(k) = mean_of(training.embeddings, steps.ahc_labels, k);
    }
    result.soft_clusters = centroid_similarities(embeddings, centroids);
    result.hard_clusters = config.constrained_assignment
                               ? assign_inactive_last(result.soft_clusters, segmentations)
                               : unconstrained_argmax(result.soft_clusters);
  }
  result.centroids = to_ndarray(centroids);
  return result;
}

}  // namespace parley::cluster
