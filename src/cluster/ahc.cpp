#include "cluster/ahc.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <thread>
#include <utility>

#include "core/error.h"
#include "core/parallel_for.h"

namespace parley::cluster {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

std::int64_t condensed_index(std::int64_t n, std::int64_t i, std::int64_t j) {
  if (i > j) std::swap(i, j);
  return n * i - (i * (i + 1) / 2) + (j - i - 1);
}

// Lance–Williams updates, written in scipy's operation order so that rounding matches.
double updated_distance(LinkageMethod method, double d_xi, double d_yi, double d_xy, int size_x,
                        int size_y) {
  switch (method) {
    case LinkageMethod::kCentroid:
      return std::sqrt(
          ((static_cast<double>(size_x) * d_xi * d_xi + static_cast<double>(size_y) * d_yi * d_yi) -
           static_cast<double>(size_x * size_y) * d_xy * d_xy /
               static_cast<double>(size_x + size_y)) /
          static_cast<double>(size_x + size_y));
    case LinkageMethod::kMedian:
      return std::sqrt(0.5 * (d_xi * d_xi + d_yi * d_yi) - 0.25 * d_xy * d_xy);
    case LinkageMethod::kAverage:
      return (static_cast<double>(size_x) * d_xi + static_cast<double>(size_y) * d_yi) /
             static_cast<double>(size_x + size_y);
    case LinkageMethod::kComplete:
      return std::max(d_xi, d_yi);
  }
  return kInfinity;
}

// A binary min-heap over keys 0..n-1 with changeable values (scipy's `Heap`, same sift rules).
class KeyedMinHeap {
 public:
  explicit KeyedMinHeap(const std::vector<double>& values)
      : values_(values),
        index_by_key_(values.size()),
        key_by_index_(values.size()),
        size_(static_cast<int>(values.size())) {
    for (int i = 0; i < size_; ++i) index_by_key_[i] = key_by_index_[i] = i;
    for (int i = size_ / 2 - 1; i >= 0; --i) sift_down(i);
  }
  std::pair<int, double> min() const { return {key_by_index_[0], values_[0]}; }
  void remove_min() {
    swap(0, size_ - 1);
    --size_;
    sift_down(0);
  }
  void change_value(int key, double value) {
    const int index = index_by_key_[key];
    const double old_value = values_[index];
    values_[index] = value;
    if (value < old_value) {
      sift_up(index);
    } else {
      sift_down(index);
    }
  }

 private:
  void sift_up(int index) {
    int parent = (index - 1) >> 1;
    while (index > 0 && values_[parent] > values_[index]) {
      swap(index, parent);
      index = parent;
      parent = (index - 1) >> 1;
    }
  }
  void sift_down(int index) {
    int child = 2 * index + 1;
    while (child < size_) {
      if (child + 1 < size_ && values_[child + 1] < values_[child]) ++child;
      if (values_[index] > values_[child]) {
        swap(index, child);
        index = child;
        child = 2 * index + 1;
      } else {
        break;
      }
    }
  }
  void swap(int i, int j) {
    std::swap(values_[i], values_[j]);
    const int key_i = key_by_index_[i];
    const int key_j = key_by_index_[j];
    key_by_index_[i] = key_j;
    key_by_index_[j] = key_i;
    index_by_key_[key_i] = j;
    index_by_key_[key_j] = i;
  }

  std::vector<double> values_;
  std::vector<int> index_by_key_;
  std::vector<int> key_by_index_;
  int size_;
};

// Nearest live cluster with a higher index than x (first one on ties).
std::pair<int, double> nearest_above(int n, const std::vector<double>& distances,
                                     const std::vector<int>& sizes, int x) {
  double current_min = kInfinity;
  int nearest = -1;
  for (int i = x + 1; i < n; ++i) {
    if (sizes[i] == 0) continue;
    const double distance = distances[condensed_index(n, x, i)];
    if (distance < current_min) {
      current_min = distance;
      nearest = i;
    }
  }
  if (nearest == -1) {
    fail(
        "hierarchical clustering: no finite distance between clusters; the embeddings contain "
        "NaN or infinite values");
  }
  return {nearest, current_min};
}

}  // namespace

std::string to_string(LinkageMethod method) {
  switch (method) {
    case LinkageMethod::kCentroid:
      return "centroid";
    case LinkageMethod::kMedian:
      return "median";
    case LinkageMethod::kAverage:
      return "average";
    case LinkageMethod::kComplete:
      return "complete";
  }
  return "unknown";
}

namespace {

// What a pair of observations a, b sums over the dimensions.
enum class PairTerm { kSquaredDifference, kProduct };

// Observations per block: the SIMD lanes that compute that many pairs side by side.
constexpr Eigen::Index kBlockWidth = 16;
// Rows computed against every block before the next rows, so that blocks stay in cache.
constexpr Eigen::Index kRowTile = 32;

// Sums over the dimensions for one observation `a` against the kBlockWidth observations of
// `block` (dimension-major: `dimension` rows of kBlockWidth values). Each pair is summed in the
// fixed order of a one-pair loop: four partial sums, the r-th over the dimensions d = r (mod 4)
// below the last multiple of 4, the leftover dimensions added to the first, combined as
// (s0 + s1) + (s2 + s3) (scipy's pdist also sums in unrolled blocks). The lanes only put
// independent pairs side by side, so every value is bitwise what that loop gives, whatever the
// block a pair falls in or the thread that computes it.
template <PairTerm term>
void block_sums(const double* block, const double* a, Eigen::Index dimension, double* sums) {
  const auto term_of = [](double x, double y) {
    if constexpr (term == PairTerm::kSquaredDifference) {
      const double difference = x - y;  // (b - a)² is bitwise (a - b)²
      return difference * difference;
    } else {
      return x * y;
    }
  };
  const Eigen::Index blocked = dimension / 4 * 4;
  double partial[4][kBlockWidth];
  for (Eigen::Index r = 0; r < 4; ++r) {
    double sum[kBlockWidth] = {};
    const auto add_dimension = [&](Eigen::Index d) {
      const double value = a[d];
      const double* row = block + d * kBlockWidth;
      for (Eigen::Index k = 0; k < kBlockWidth; ++k) sum[k] += term_of(row[k], value);
    };
    for (Eigen::Index d = r; d < blocked; d += 4) add_dimension(d);
    if (r == 0) {
      for (Eigen::Index d = blocked; d < dimension; ++d) add_dimension(d);
    }
    std::copy(sum, sum + kBlockWidth, partial[r]);
  }
  for (Eigen::Index k = 0; k < kBlockWidth; ++k) {
    sums[k] = (partial[0][k] + partial[1][k]) + (partial[2][k] + partial[3][k]);
  }
}

// The observations (rows of `observations`) twice over: one contiguous row each, and in
// dimension-major blocks of kBlockWidth observations (the last one padded with zeros).
struct BlockedObservations {
  explicit BlockedObservations(const Eigen::MatrixXd& observations)
      : count(observations.rows()),
        dimension(observations.cols()),
        rows(observations),
        blocks(static_cast<std::size_t>(block_count() * dimension * kBlockWidth), 0.0) {
    for (Eigen::Index i = 0; i < count; ++i) {
      double* column = block(i / kBlockWidth) + i % kBlockWidth;
      for (Eigen::Index d = 0; d < dimension; ++d) column[d * kBlockWidth] = observations(i, d);
    }
  }
  Eigen::Index block_count() const { return (count + kBlockWidth - 1) / kBlockWidth; }
  double* block(Eigen::Index b) {
    return blocks.data() + static_cast<std::size_t>(b * dimension * kBlockWidth);
  }
  const double* block(Eigen::Index b) const {
    return blocks.data() + static_cast<std::size_t>(b * dimension * kBlockWidth);
  }
  const double* row(Eigen::Index i) const { return rows.row(i).data(); }

  Eigen::Index count;
  Eigen::Index dimension;
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> rows;
  std::vector<double> blocks;
};

// pair_value(i, j, sum) for every pair i < j, in condensed order. Rows are split over threads
// so that they get similar numbers of pairs; every entry is computed the same way whichever
// thread computes it, so the result does not depend on the number of threads.
template <PairTerm term, typename PairValue>
std::vector<double> condensed_pair_values(const BlockedObservations& data,
                                          const PairValue& pair_value, unsigned max_threads) {
  const Eigen::Index n = data.count;
  std::vector<double> values(static_cast<std::size_t>(n * (n - 1) / 2));
  const auto pair_count = static_cast<double>(values.size());
  const unsigned available =
      max_threads > 0 ? max_threads : std::min(8U, std::thread::hardware_concurrency());
  const unsigned thread_count = max_threads == 0 && pair_count < 1e5 ? 1U : std::max(1U, available);
  // Rows before row_ends[t] hold about (t + 1) / thread_count of the pairs.
  std::vector<Eigen::Index> row_ends(thread_count, n);
  Eigen::Index end = 0;
  for (unsigned t = 0; t + 1 < thread_count; ++t) {
    const double share = pair_count * (t + 1) / thread_count;
    while (end < n && static_cast<double>(condensed_index(n, end, n - 1)) < share) ++end;
    row_ends[t] = end;
  }
  parallel_for(thread_count, static_cast<int>(thread_count), [&](std::size_t t) {
    const Eigen::Index first_row = t == 0 ? 0 : row_ends[t - 1];
    const Eigen::Index last_row = std::min(row_ends[t], n - 1);
    double sums[kBlockWidth];
    for (Eigen::Index tile = first_row; tile < last_row; tile += kRowTile) {
      const Eigen::Index tile_end = std::min(tile + kRowTile, last_row);
      for (Eigen::Index b = (tile + 1) / kBlockWidth; b < data.block_count(); ++b) {
        const Eigen::Index block_first = b * kBlockWidth;
        const Eigen::Index block_end = std::min(block_first + kBlockWidth, n);
        for (Eigen::Index i = tile; i < std::min(tile_end, block_end - 1); ++i) {
          block_sums<term>(data.block(b), data.row(i), data.dimension, sums);
          const Eigen::Index first_j = std::max(block_first, i + 1);
          double* out = values.data() + condensed_index(n, i, first_j);
          for (Eigen::Index j = first_j; j < block_end; ++j) {
            *out++ = pair_value(i, j, sums[j - block_first]);
          }
        }
      }
    }
  });
  return values;
}

}  // namespace

std::vector<double> condensed_euclidean_distances(const Eigen::MatrixXd& observations,
                                                  unsigned max_threads) {
  const BlockedObservations data(observations);
  return condensed_pair_values<PairTerm::kSquaredDifference>(
      data, [](Eigen::Index, Eigen::Index, double sum) { return std::sqrt(sum); }, max_threads);
}

std::vector<double> condensed_cosine_distances(const Eigen::MatrixXd& observations,
                                               unsigned max_threads) {
  const BlockedObservations data(observations);
  std::vector<double> norms(static_cast<std::size_t>(data.count));
  double sums[kBlockWidth];
  for (Eigen::Index i = 0; i < data.count; ++i) {
    block_sums<PairTerm::kProduct>(data.block(i / kBlockWidth), data.row(i), data.dimension, sums);
    norms[i] = std::sqrt(sums[i % kBlockWidth]);
  }
  return condensed_pair_values<PairTerm::kProduct>(
      data,
      [&](Eigen::Index i, Eigen::Index j, double dot) {
        double cosine = dot / (norms[i] * norms[j]);
        if (std::abs(cosine) > 1.0) cosine = std::copysign(1.0, cosine);
        return 1.0 - cosine;
      },
      max_threads);
}

Dendrogram linkage(std::vector<double> distances, int n, LinkageMethod method) {
  if (n < 2) fail("hierarchical clustering needs at least 2 observations (got {})", n);
  if (distances.size() != static_cast<std::size_t>(n) * static_cast<std::size_t>(n - 1) / 2) {
    fail("hierarchical clustering: {} distances do not describe {} observations", distances.size(),
         n);
  }
  for (const double distance : distances) {
    if (!std::isfinite(distance)) {
      fail(
          "hierarchical clustering: the distances must be finite; the embeddings contain NaN or "
          "infinite values");
    }
  }
  Dendrogram dendrogram(static_cast<std::size_t>(n - 1));
  std::vector<int> sizes(static_cast<std::size_t>(n), 1);
  std::vector<int> cluster_ids(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) cluster_ids[i] = i;
  // For each cluster, a candidate nearest neighbour among higher indices and a lower bound of
  // the distance to its true nearest neighbour.
  std::vector<int> neighbours(static_cast<std::size_t>(n - 1));
  std::vector<double> min_distances(static_cast<std::size_t>(n - 1));
  for (int x = 0; x < n - 1; ++x) {
    std::tie(neighbours[x], min_distances[x]) = nearest_above(n, distances, sizes, x);
  }
  KeyedMinHeap heap(min_distances);

  for (int k = 0; k < n - 1; ++k) {
    int x = 0;
    int y = 0;
    double distance = 0.0;
    for (int attempt = 0; attempt < n - k; ++attempt) {
      std::tie(x, distance) = heap.min();
      y = neighbours[x];
      if (distance == distances[condensed_index(n, x, y)]) break;
      std::tie(y, distance) = nearest_above(n, distances, sizes, x);
      neighbours[x] = y;
      min_distances[x] = distance;
      heap.change_value(x, distance);
    }
    heap.remove_min();

    const int size_x = sizes[x];
    const int size_y = sizes[y];
    Merge& merge = dendrogram[static_cast<std::size_t>(k)];
    merge.first = std::min(cluster_ids[x], cluster_ids[y]);
    merge.second = std::max(cluster_ids[x], cluster_ids[y]);
    merge.distance = distance;
    merge.size = size_x + size_y;

    sizes[x] = 0;
    sizes[y] = size_x + size_y;
    cluster_ids[y] = n + k;

    for (int z = 0; z < n; ++z) {
      if (sizes[z] == 0 || z == y) continue;
      distances[condensed_index(n, z, y)] =
          updated_distance(method, distances[condensed_index(n, z, x)],
                           distances[condensed_index(n, z, y)], distance, size_x, size_y);
    }
    for (int z = 0; z < x; ++z) {
      if (sizes[z] > 0 && neighbours[z] == x) neighbours[z] = y;
    }
    for (int z = 0; z < y; ++z) {
      if (sizes[z] == 0) continue;
      const double candidate = distances[condensed_index(n, z, y)];
      if (candidate < min_distances[z]) {
        neighbours[z] = y;
        min_distances[z] = candidate;
        heap.change_value(z, candidate);
      }
    }
    if (y < n - 1) {
      const auto [nearest, nearest_distance] = nearest_above(n, distances, sizes, y);
      neighbours[y] = nearest;
      min_distances[y] = nearest_distance;
      heap.change_value(y, nearest_distance);
    }
  }
  return dendrogram;
}

std::vector<int> fcluster_distance(const Dendrogram& dendrogram, double threshold) {
  const int n = static_cast<int>(dendrogram.size()) + 1;
  std::vector<int> labels(static_cast<std::size_t>(n), 0);
  if (n == 1) return labels;
  // Largest merge distance within each subtree (scipy's get_max_dist_for_each_cluster): centroid
  // linkage is not monotonic, so a subtree can hold a merge higher than its root.
  std::vector<double> max_distance(dendrogram.size());
  for (std::size_t k = 0; k < dendrogram.size(); ++k) {
    double largest = dendrogram[k].distance;
    for (const int child : {dendrogram[k].first, dendrogram[k].second}) {
      if (child >= n)
        largest = std::max(largest, max_distance[static_cast<std::size_t>(child - n)]);
    }
    max_distance[k] = largest;
  }
  // scipy's cluster_monocrit: depth-first from the root, left child first; the first node on a
  // path whose subtree satisfies the criterion starts a cluster, other leaves are singletons.
  std::vector<int> stack{2 * n - 2};
  std::vector<bool> visited(static_cast<std::size_t>(2 * n - 1), false);
  int cluster_count = 0;
  int leader = -1;
  while (!stack.empty()) {
    const int root = stack.back() - n;
    const Merge& merge = dendrogram[static_cast<std::size_t>(root)];
    if (leader == -1 && max_distance[static_cast<std::size_t>(root)] <= threshold) {
      leader = root;
      ++cluster_count;
    }
    bool descended = false;
    for (const int child : {merge.first, merge.second}) {
      if (child >= n && !visited[static_cast<std::size_t>(child)]) {
        visited[static_cast<std::size_t>(child)] = true;
        stack.push_back(child);
        descended = true;
        break;
      }
    }
    if (descended) continue;
    for (const int child : {merge.first, merge.second}) {
      if (child < n) {
        if (leader == -1) ++cluster_count;
        labels[static_cast<std::size_t>(child)] = cluster_count - 1;
      }
    }
    if (leader == root) leader = -1;
    stack.pop_back();
  }
  return labels;
}

}  // namespace parley::cluster
