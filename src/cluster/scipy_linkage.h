#pragma once
// Agglomerative hierarchical clustering as scipy.cluster.hierarchy does it: `linkage` with
// Müllner's generic algorithm (scipy's `fast_linkage`, its nearest-neighbour heap and tie
// order) and `fcluster(..., criterion="distance")` with scipy's cluster numbering. For the
// "centroid" and "median" methods scipy runs exactly this algorithm, so dendrograms are
// identical; pyannote's VBx clustering initialises from centroid linkage of length-normalised
// embeddings. "average" and "complete" use the same algorithm (scipy uses NN-chain for them and
// sorts the merges by distance, so rows and cluster numbers may be ordered differently; the
// partition a cut gives is the same up to exact ties).
#include <string>
#include <vector>

#include <Eigen/Dense>

namespace parley::cluster {

enum class LinkageMethod { kCentroid, kMedian, kAverage, kComplete };

// scipy's method names: "centroid", "median", "average", "complete".
std::string to_string(LinkageMethod method);

// scipy's linkage matrix Z: row k merges clusters `first` < `second` (ids < n are observations,
// id n + k is the cluster formed at row k) at `distance`, giving a cluster of `size` members.
struct Merge {
  int first = 0;
  int second = 0;
  double distance = 0.0;
  int size = 0;
};
using Dendrogram = std::vector<Merge>;

// Pairwise Euclidean distances in scipy's condensed order (i < j, row by row). Large inputs are
// split over up to `max_threads` threads (0: the hardware's, at most 8); the values do not
// depend on the thread count.
std::vector<double> condensed_euclidean_distances(const Eigen::MatrixXd& observations,
                                                  unsigned max_threads = 0);
// Pairwise cosine distances (1 - cosine similarity, scipy's "cosine"), condensed order.
std::vector<double> condensed_cosine_distances(const Eigen::MatrixXd& observations,
                                               unsigned max_threads = 0);

// scipy.cluster.hierarchy.linkage(condensed, method) for `observation_count` >= 2 observations.
Dendrogram linkage(std::vector<double> condensed_distances, int observation_count,
                   LinkageMethod method);

// scipy.cluster.hierarchy.fcluster(Z, threshold, criterion="distance") - 1: a cluster is every
// subtree whose largest merge distance is <= threshold. Labels are 0-based, numbered in scipy's
// depth-first order.
std::vector<int> fcluster_distance(const Dendrogram& dendrogram, double threshold);

}  // namespace parley::cluster
