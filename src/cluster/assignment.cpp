#include "cluster/assignment.h"

#include <cmath>
#include <limits>

#include "cluster/inactive_speakers.h"
#include "core/error.h"
#include "core/linear_assignment.h"

namespace parley::cluster {

TrainingSet select_training_embeddings(const NdArray<float>& embeddings,
                                       const NdArray<float>& segmentations,
                                       double min_active_ratio) {
  if (embeddings.rank() != 3 || segmentations.rank() != 3) {
    fail(
        "clustering: embeddings must be [chunks, speakers, dim] and segmentations "
        "[chunks, frames, speakers] (got ranks {} and {})",
        embeddings.rank(), segmentations.rank());
  }
  const std::size_t chunk_count = embeddings.dim(0);
  const std::size_t speaker_count = embeddings.dim(1);
  const std::size_t dimension = embeddings.dim(2);
  const std::size_t frame_count = segmentations.dim(1);
  if (segmentations.dim(0) != chunk_count || segmentations.dim(2) != speaker_count) {
    fail("clustering: segmentations [{}, {}, {}] do not match embeddings [{}, {}, {}]",
         segmentations.dim(0), frame_count, segmentations.dim(2), chunk_count, speaker_count,
         dimension);
  }
  TrainingSet training;
  const double min_clean_frames = min_active_ratio * static_cast<double>(frame_count);
  for (std::size_t chunk = 0; chunk < chunk_count; ++chunk) {
    std::vector<double> clean_frames(speaker_count, 0.0);
    for (std::size_t frame = 0; frame < frame_count; ++frame) {
      double active = 0.0;
      for (std::size_t s = 0; s < speaker_count; ++s) active += segmentations(chunk, frame, s);
      if (active != 1.0) continue;
      for (std::size_t s = 0; s < speaker_count; ++s) {
        clean_frames[s] += segmentations(chunk, frame, s);
      }
    }
    for (std::size_t s = 0; s < speaker_count; ++s) {
      bool finite = true;
      for (std::size_t d = 0; d < dimension && finite; ++d) {
        finite = !std::isnan(embeddings(chunk, s, d));
      }
      if (finite && clean_frames[s] >= min_clean_frames) {
        training.chunk_index.push_back(chunk);
        training.speaker_index.push_back(s);
      }
    }
  }
  widen_training_embeddings(embeddings, training);
  return training;
}

void widen_training_embeddings(const NdArray<float>& embeddings, TrainingSet& training) {
  const std::size_t dimension = embeddings.dim(2);
  training.embeddings.resize(static_cast<Eigen::Index>(training.size()),
                             static_cast<Eigen::Index>(dimension));
  for (std::size_t row = 0; row < training.size(); ++row) {
    for (std::size_t d = 0; d < dimension; ++d) {
      training.embeddings(static_cast<Eigen::Index>(row), static_cast<Eigen::Index>(d)) =
          embeddings(training.chunk_index[row], training.speaker_index[row], d);
    }
  }
}

NdArray<double> centroid_similarities(const NdArray<float>& embeddings,
                                      const Eigen::MatrixXd& centroids) {
  const std::size_t chunk_count = embeddings.dim(0);
  const std::size_t speaker_count = embeddings.dim(1);
  const std::size_t dimension = embeddings.dim(2);
  const auto cluster_count = static_cast<std::size_t>(centroids.rows());
  if (static_cast<std::size_t>(centroids.cols()) != dimension) {
    fail("clustering: centroids have {} dimensions, embeddings {}", centroids.cols(), dimension);
  }
  const Eigen::VectorXd centroid_norms = centroids.rowwise().norm();
  NdArray<double> soft({chunk_count, speaker_count, cluster_count});
  Eigen::VectorXd embedding(static_cast<Eigen::Index>(dimension));
  std::vector<double> dots(cluster_count);
  for (std::size_t chunk = 0; chunk < chunk_count; ++chunk) {
    for (std::size_t s = 0; s < speaker_count; ++s) {
      for (std::size_t d = 0; d < dimension; ++d) {
        embedding(static_cast<Eigen::Index>(d)) = embeddings(chunk, s, d);
      }
      const double norm = embedding.norm();
      // u.v for every centroid, each summed over the dimensions in order (as Eigen's dot with a
      // centroid row, which is not contiguous, does), the centroids side by side.
      for (std::size_t d = 0; d < dimension; ++d) {
        const double value = embedding(static_cast<Eigen::Index>(d));
        const double* column = centroids.col(static_cast<Eigen::Index>(d)).data();
        if (d == 0) {
          for (std::size_t k = 0; k < cluster_count; ++k) dots[k] = value * column[k];
        } else {
          for (std::size_t k = 0; k < cluster_count; ++k) dots[k] += value * column[k];
        }
      }
      for (std::size_t k = 0; k < cluster_count; ++k) {
        // scipy's cosine distance: 1 - u.v / (|u| |v|), the cosine clipped to [-1, 1].
        double cosine = dots[k] / (norm * centroid_norms(static_cast<Eigen::Index>(k)));
        if (std::abs(cosine) > 1.0) cosine = std::copysign(1.0, cosine);
        soft(chunk, s, k) = 2.0 - (1.0 - cosine);
      }
    }
  }
  return soft;
}

NdArray<int> constrained_argmax(const NdArray<double>& soft_clusters) {
  const std::size_t chunk_count = soft_clusters.dim(0);
  const std::size_t speaker_count = soft_clusters.dim(1);
  const std::size_t cluster_count = soft_clusters.dim(2);
  double smallest = std::numeric_limits<double>::infinity();
  for (const double value : soft_clusters.values()) {
    if (!std::isnan(value)) smallest = std::min(smallest, value);
  }
  NdArray<int> hard({chunk_count, speaker_count}, -2);
  NdArray<double> cost({speaker_count, cluster_count});
  for (std::size_t chunk = 0; chunk < chunk_count; ++chunk) {
    for (std::size_t s = 0; s < speaker_count; ++s) {
      for (std::size_t k = 0; k < cluster_count; ++k) {
        const double value = soft_clusters(chunk, s, k);
        cost(s, k) = std::isnan(value) ? smallest : value;
      }
    }
    const Assignment assignment = linear_sum_assignment(cost, AssignmentGoal::maximize);
    for (std::size_t i = 0; i < assignment.rows.size(); ++i) {
      hard(chunk, assignment.rows[i]) = static_cast<int>(assignment.cols[i]);
    }
  }
  return hard;
}

NdArray<int> assign_inactive_last(NdArray<double>& soft_clusters,
                                  const NdArray<float>& segmentations) {
  double smallest = std::numeric_limits<double>::infinity();
  for (const double value : soft_clusters.values()) {
    smallest = std::isnan(value) || std::isnan(smallest) ? std::numeric_limits<double>::quiet_NaN()
                                                         : std::min(smallest, value);
  }
  const double below_all = smallest - 1.0;
  const std::vector<bool> inactive = inactive_speakers(segmentations);
  const std::size_t cluster_count = soft_clusters.dim(2);
  for (std::size_t i = 0; i < inactive.size(); ++i) {
    if (!inactive[i]) continue;
    for (std::size_t k = 0; k < cluster_count; ++k)
      soft_clusters(i * cluster_count + k) = below_all;
  }
  return constrained_argmax(soft_clusters);
}

NdArray<int> unconstrained_argmax(const NdArray<double>& soft_clusters) {
  const std::size_t chunk_count = soft_clusters.dim(0);
  const std::size_t speaker_count = soft_clusters.dim(1);
  const std::size_t cluster_count = soft_clusters.dim(2);
  NdArray<int> hard({chunk_count, speaker_count}, 0);
  for (std::size_t chunk = 0; chunk < chunk_count; ++chunk) {
    for (std::size_t s = 0; s < speaker_count; ++s) {
      std::size_t best = 0;
      for (std::size_t k = 0; k < cluster_count; ++k) {
        const double value = soft_clusters(chunk, s, k);
        if (std::isnan(value)) {
          best = k;
          break;
        }
        if (value > soft_clusters(chunk, s, best)) best = k;
      }
      hard(chunk, s) = static_cast<int>(best);
    }
  }
  return hard;
}

Eigen::MatrixXd normalise_rows_like_float32(const Eigen::MatrixXd& rows) {
  Eigen::MatrixXd normalised(rows.rows(), rows.cols());
  for (Eigen::Index r = 0; r < rows.rows(); ++r) {
    const auto norm = static_cast<float>(rows.row(r).norm());
    for (Eigen::Index c = 0; c < rows.cols(); ++c) {
      normalised(r, c) = static_cast<double>(static_cast<float>(rows(r, c)) / norm);
    }
  }
  return normalised;
}

}  // namespace parley::cluster
