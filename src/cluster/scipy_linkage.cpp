#include "cluster/scipy_linkage.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <thread>
#include <utility>

#include "core/error.h"
#include "core/parallel_for.h"
#include "core/sanitizers.h"

namespace parley::cluster {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

std::int64_t condensed_index(std::int64_t n, std::int64_t i, std::int64_t j) {
  if (i > j) std::swap(i, j);
  return n * i - (i * (i + 1) / 2) + (j - i - 1);
}

// Lance–Williams updates, written in scipy's operation order so that rounding matches.
[[gnu::always_inline]] inline double updated_distance(LinkageMethod method, double d_xi,
                                                      double d_yi, double d_xy, int size_x,
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

// The clusters still alive, in increasing index order: a doubly linked list over 0..n-1 closed
// through the sentinel n, so that loops over them skip the merged ones without visiting them.
class LiveClusters {
 public:
  explicit LiveClusters(int n)
      : next_(static_cast<std::size_t>(n) + 1), previous_(static_cast<std::size_t>(n) + 1) {
    for (int i = 0; i <= n; ++i) {
      next_[static_cast<std::size_t>(i)] = i == n ? 0 : i + 1;
      previous_[static_cast<std::size_t>(i)] = i == 0 ? n : i - 1;
    }
  }
  int first() const { return next_.back(); }
  // The next live cluster after live cluster i; n after the last.
  int next(int i) const { return next_[static_cast<std::size_t>(i)]; }
  void remove(int i) {
    next_[static_cast<std::size_t>(previous_[static_cast<std::size_t>(i)])] =
        next_[static_cast<std::size_t>(i)];
    previous_[static_cast<std::size_t>(next_[static_cast<std::size_t>(i)])] =
        previous_[static_cast<std::size_t>(i)];
  }

 private:
  std::vector<int> next_;
  std::vector<int> previous_;
};

// How many clusters ahead linkage's column loop asks for the distances it will read.
constexpr int kPrefetchDistance = 16;

void prefetch(const double* address) {
#if defined(__GNUC__) || defined(__clang__)
  __builtin_prefetch(address);
#else
  (void)address;
#endif
}

// Row x of the condensed matrix, indexed by the column: row[j] is the distance (x, j), j > x.
class CondensedRow {
 public:
  CondensedRow(std::vector<double>& distances, std::int64_t n, std::int64_t x)
      : distances_(distances.data()), offset_(condensed_index(n, x, x + 1) - (x + 1)) {}
  double& operator[](std::int64_t j) const { return distances_[offset_ + j]; }

 private:
  double* distances_;
  std::int64_t offset_;  // (x, j) sits at offset_ + j
};

[[noreturn]] void fail_no_finite_distance() {
  fail(
      "hierarchical clustering: no finite distance between clusters; the embeddings contain "
      "NaN or infinite values");
}

// Nearest live cluster with a higher index than live cluster x (first one on ties).
std::pair<int, double> nearest_above(int n, std::vector<double>& distances,
                                     const LiveClusters& live, int x) {
  const CondensedRow row(distances, n, x);
  double current_min = kInfinity;
  int nearest = -1;
  for (int i = live.next(x); i < n; i = live.next(i)) {
    if (row[i] < current_min) {
      current_min = row[i];
      nearest = i;
    }
  }
  if (nearest == -1) fail_no_finite_distance();
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

// Builds for x86-64 target its baseline (SSE2, two doubles per instruction); the distance loops
// also get an AVX2 copy (four), chosen at run time where the processor has it. Both copies run
// the same operations in the same order, without fused multiply-adds (this file is compiled
// with -ffp-contract=off), so every distance is bitwise the same on every machine.
// GCC only, without sanitizers: clang 14 does not multiversion function templates, and the
// copies' resolver (an ifunc) runs before TSan's runtime is up, which crashes at start. Those
// builds run the baseline copy, to the same bits.
#if defined(__x86_64__) && defined(__linux__) && defined(__GLIBC__) && defined(__GNUC__) && \
    !defined(__clang__) && !defined(PARLEY_SANITIZED)
#define PARLEY_ALSO_FOR_AVX2 [[gnu::target_clones("avx2", "default")]]
#else
#define PARLEY_ALSO_FOR_AVX2
#endif

// Rows computed side by side against each later observation (their values stay in cache).
constexpr Eigen::Index kRowTile = 32;

// Fills the condensed entries of rows [first_row, last_row): entry (i, j) sits at
// condensed_index(n, i, j). Each entry is computed the same way whichever thread computes it.
template <typename PairDistance>
PARLEY_ALSO_FOR_AVX2 void fill_condensed_rows(Eigen::Index n, Eigen::Index first_row,
                                              Eigen::Index last_row,
                                              const PairDistance& pair_distance,
                                              std::vector<double>& distances) {
  // Tiles of rows meet each later observation j in turn, so that j's values are read from
  // memory once per tile rather than once per row.
  for (Eigen::Index tile = first_row; tile < last_row; tile += kRowTile) {
    const Eigen::Index tile_end = std::min(tile + kRowTile, last_row);
    for (Eigen::Index j = tile + 1; j < n; ++j) {
      for (Eigen::Index i = tile; i < std::min(tile_end, j); ++i) {
        distances[static_cast<std::size_t>(condensed_index(n, i, j))] = pair_distance(i, j);
      }
    }
  }
}

// Splits the rows so that threads get similar numbers of pairs; the result does not depend on
// the number of threads (every entry is computed independently, in a fixed order).
template <typename PairDistance>
std::vector<double> condensed_distances(Eigen::Index n, const PairDistance& pair_distance,
                                        unsigned max_threads) {
  std::vector<double> distances(static_cast<std::size_t>(n * (n - 1) / 2));
  const auto pair_count = static_cast<double>(distances.size());
  const unsigned available =
      max_threads > 0 ? max_threads : static_cast<unsigned>(hardware_threads(8));
  const unsigned thread_count = max_threads == 0 && pair_count < 1e5 ? 1U : std::max(1U, available);
  std::vector<std::thread> threads;
  Eigen::Index row = 0;
  for (unsigned t = 0; t < thread_count; ++t) {
    // Rows before `end` hold about (t + 1) / thread_count of the pairs.
    const double share = pair_count * (t + 1) / thread_count;
    Eigen::Index end = row;
    while (end < n && static_cast<double>(condensed_index(n, end, n - 1)) < share) ++end;
    if (t + 1 == thread_count) end = n;
    threads.emplace_back(fill_condensed_rows<PairDistance>, n, row, end, std::cref(pair_distance),
                         std::ref(distances));
    row = end;
  }
  for (std::thread& thread : threads) thread.join();
  return distances;
}

// Four interleaved partial sums of (a - b)² (a fixed order, so deterministic), combined as
// (s0 + s1) + (s2 + s3); scipy's pdist also sums in unrolled blocks.
[[gnu::always_inline]] inline double squared_distance(const double* a, const double* b,
                                                      Eigen::Index dimension) {
  double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
  Eigen::Index d = 0;
  for (; d + 4 <= dimension; d += 4) {
    const double d0 = a[d] - b[d], d1 = a[d + 1] - b[d + 1];
    const double d2 = a[d + 2] - b[d + 2], d3 = a[d + 3] - b[d + 3];
    s0 += d0 * d0;
    s1 += d1 * d1;
    s2 += d2 * d2;
    s3 += d3 * d3;
  }
  for (; d < dimension; ++d) {
    const double difference = a[d] - b[d];
    s0 += difference * difference;
  }
  return (s0 + s1) + (s2 + s3);
}

[[gnu::always_inline]] inline double dot_product(const double* a, const double* b,
                                                 Eigen::Index dimension) {
  double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
  Eigen::Index d = 0;
  for (; d + 4 <= dimension; d += 4) {
    s0 += a[d] * b[d];
    s1 += a[d + 1] * b[d + 1];
    s2 += a[d + 2] * b[d + 2];
    s3 += a[d + 3] * b[d + 3];
  }
  for (; d < dimension; ++d) s0 += a[d] * b[d];
  return (s0 + s1) + (s2 + s3);
}

}  // namespace

std::vector<double> condensed_euclidean_distances(const Eigen::MatrixXd& observations,
                                                  unsigned max_threads) {
  // One contiguous column per observation.
  const Eigen::MatrixXd columns = observations.transpose();
  const Eigen::Index dimension = columns.rows();
  return condensed_distances(
      columns.cols(),
      [&](Eigen::Index i, Eigen::Index j) {
        return std::sqrt(squared_distance(columns.col(i).data(), columns.col(j).data(), dimension));
      },
      max_threads);
}

std::vector<double> condensed_cosine_distances(const Eigen::MatrixXd& observations,
                                               unsigned max_threads) {
  const Eigen::MatrixXd columns = observations.transpose();
  const Eigen::Index dimension = columns.rows();
  std::vector<double> norms(static_cast<std::size_t>(columns.cols()));
  for (Eigen::Index i = 0; i < columns.cols(); ++i) {
    norms[i] = std::sqrt(dot_product(columns.col(i).data(), columns.col(i).data(), dimension));
  }
  return condensed_distances(
      columns.cols(),
      [&](Eigen::Index i, Eigen::Index j) {
        double cosine = dot_product(columns.col(i).data(), columns.col(j).data(), dimension) /
                        (norms[i] * norms[j]);
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
  LiveClusters live(n);
  // For each cluster, a candidate nearest neighbour among higher indices and a lower bound of
  // the distance to its true nearest neighbour.
  std::vector<int> neighbours(static_cast<std::size_t>(n - 1));
  std::vector<double> min_distances(static_cast<std::size_t>(n - 1));
  for (int x = 0; x < n - 1; ++x) {
    std::tie(neighbours[x], min_distances[x]) = nearest_above(n, distances, live, x);
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
      std::tie(y, distance) = nearest_above(n, distances, live, x);
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

    live.remove(x);
    sizes[x] = 0;
    sizes[y] = size_x + size_y;
    cluster_ids[y] = n + k;

    // y now stands for the merged cluster: its distance to every live z (Lance-Williams), one
    // pass for the clusters below y and one for those above, doing per z what scipy's separate
    // loops do, in the same order (so the heap sees the same changes in the same order).
    // Below y: (z, y) is in row z. z's neighbour candidate moves from x to y, and to y if the
    // merged cluster is nearer than z's bound.
    const CondensedRow row_x(distances, n, x);
    // (z, x) and (z, y) lie in a different row for each z, a cache (and TLB) miss each: ask for
    // them kPrefetchDistance clusters ahead so that the misses overlap.
    int ahead = live.first();
    const auto prefetch_ahead = [&] {
      const CondensedRow row_ahead(distances, n, ahead);
      prefetch(&row_ahead[y]);
      if (ahead < x) prefetch(&row_ahead[x]);
      ahead = live.next(ahead);
    };
    for (int step = 0; step < kPrefetchDistance && ahead < y; ++step) prefetch_ahead();
    for (int z = live.first(); z < y; z = live.next(z)) {
      if (ahead < y) prefetch_ahead();
      const CondensedRow row_z(distances, n, z);
      const double d_zx = z < x ? row_z[x] : row_x[z];
      row_z[y] = updated_distance(method, d_zx, row_z[y], distance, size_x, size_y);
      if (z < x && neighbours[z] == x) neighbours[z] = y;
      if (row_z[y] < min_distances[z]) {
        neighbours[z] = y;
        min_distances[z] = row_z[y];
        heap.change_value(z, row_z[y]);
      }
    }
    // Above y: (y, z) is in row y, and the merged cluster's nearest neighbour is among them.
    if (y < n - 1) {
      const CondensedRow row_y(distances, n, y);
      double nearest_distance = kInfinity;
      int nearest = -1;
      for (int z = live.next(y); z < n; z = live.next(z)) {
        row_y[z] = updated_distance(method, row_x[z], row_y[z], distance, size_x, size_y);
        if (row_y[z] < nearest_distance) {
          nearest_distance = row_y[z];
          nearest = z;
        }
      }
      if (nearest == -1) fail_no_finite_distance();
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
