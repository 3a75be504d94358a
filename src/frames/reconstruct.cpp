#include "frames/reconstruct.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "cluster/inactive_speakers.h"
#include "core/error.h"
#include "frames/aggregation.h"
#include "frames/speaker_count.h"

namespace parley::frames {

namespace {

// Rows [first, last) of `rows` rows kept by SlidingWindowFeature.crop(focus, "loose").
struct CroppedRows {
  std::size_t first = 0;
  std::size_t last = 0;
};

CroppedRows crop_rows(const SlidingWindow& window, std::size_t rows, const Segment& focus) {
  const FrameRange range = window.crop(focus, Alignment::kLoose);
  const auto count = static_cast<std::int64_t>(rows);
  if (range.last < 0 || range.first >= count) {
    fail(
        "reconstruction: the speaker count and the activations do not overlap in time; they "
        "must come from the same recording");
  }
  return {static_cast<std::size_t>(std::max<std::int64_t>(range.first, 0)),
          static_cast<std::size_t>(std::min(range.last, count))};
}

}  // namespace

SlidingWindowFeature<float> clustered_activations(const NdArray<float>& segmentations,
                                                  const SlidingWindow& chunks,
                                                  const NdArray<int>& hard_clusters,
                                                  const SlidingWindow& frames) {
  cluster::check_hard_clusters_shape(segmentations, hard_clusters, "reconstruction");
  const std::size_t num_chunks = segmentations.dim(0);
  const std::size_t num_frames = segmentations.dim(1);
  const std::size_t local_speakers = segmentations.dim(2);
  int largest = -1;
  for (int cluster : hard_clusters.values()) {
    if (cluster < 0 && cluster != cluster::kInactiveSpeaker) {
      fail("reconstruction: invalid cluster id {} (expected >= 0, or -2 for inactive speakers)",
           cluster);
    }
    largest = std::max(largest, cluster);
  }
  const auto num_clusters = static_cast<std::size_t>(largest + 1);
  AggregateOptions options;
  options.hamming = false;
  options.missing = 0.0f;
  options.skip_average = true;
  ChunkAggregator aggregator(num_chunks, num_frames, num_clusters, chunks, frames, options);
  // One chunk's clustered segmentation [frames, clusters]: the frame-wise max of the chunk's
  // local speakers assigned to each cluster, NaN for clusters the chunk does not contain (so
  // that they do not count as covered; only the chunk's own clusters are written and read).
  std::vector<double> clustered(num_frames * num_clusters);
  std::vector<std::size_t> chunk_clusters;
  for (std::size_t c = 0; c < num_chunks; ++c) {
    chunk_clusters.clear();
    for (std::size_t s = 0; s < local_speakers; ++s) {
      const int cluster = hard_clusters(c, s);
      if (cluster != cluster::kInactiveSpeaker &&
          std::find(chunk_clusters.begin(), chunk_clusters.end(),
                    static_cast<std::size_t>(cluster)) == chunk_clusters.end()) {
        chunk_clusters.push_back(static_cast<std::size_t>(cluster));
      }
    }
    for (std::size_t f = 0; f < num_frames; ++f) {
      for (const std::size_t k : chunk_clusters) {
        clustered[f * num_clusters + k] = std::numeric_limits<double>::quiet_NaN();
      }
    }
    for (std::size_t s = 0; s < local_speakers; ++s) {
      const int cluster = hard_clusters(c, s);
      if (cluster == cluster::kInactiveSpeaker) {
        continue;
      }
      const auto k = static_cast<std::size_t>(cluster);
      for (std::size_t f = 0; f < num_frames; ++f) {
        const auto activation = static_cast<double>(segmentations(c, f, s));
        double& slot = clustered[f * num_clusters + k];
        // first speaker of the cluster sets the value, the others take the max
        slot = std::isnan(slot) ? activation : std::max(slot, activation);
      }
    }
    aggregator.add(c, clustered, chunk_clusters);
  }
  return aggregator.result();
}

SlidingWindowFeature<float> to_diarization(const SlidingWindowFeature<float>& activations,
                                           const SlidingWindowFeature<int>& count) {
  const std::size_t num_speakers = activations.data.dim(1);
  const int most_speakers = max_count(count.data);
  const std::size_t padded_speakers =
      std::max(num_speakers, static_cast<std::size_t>(most_speakers));

  // Crop both to their common extent (a no-op when they share the frames window and length).
  const Segment activations_extent =
      activations.window.range_to_segment(0, static_cast<std::int64_t>(activations.data.dim(0)));
  const Segment count_extent =
      count.window.range_to_segment(0, static_cast<std::int64_t>(count.data.dim(0)));
  const Segment extent{std::max(activations_extent.start, count_extent.start),
                       std::min(activations_extent.end, count_extent.end)};
  const CroppedRows activation_rows =
      crop_rows(activations.window, activations.data.dim(0), extent);
  const CroppedRows count_rows = crop_rows(count.window, count.data.dim(0), extent);

  const std::size_t num_frames = activation_rows.last - activation_rows.first;
  const std::size_t counted_frames = std::min(num_frames, count_rows.last - count_rows.first);
  NdArray<float> binary({num_frames, padded_speakers});
  for (std::size_t t = 0; t < counted_frames; ++t) {
    const std::size_t row = activation_rows.first + t;
    const int speakers_here = count.data(count_rows.first + t);
    const auto active =
        std::min(static_cast<std::size_t>(std::max(speakers_here, 0)), padded_speakers);
    // The first `active` speakers of the stable order by decreasing activation: each time the
    // largest activation not yet chosen, the lowest index on ties (padding speakers are 0).
    for (std::size_t i = 0; i < active; ++i) {
      std::size_t best = padded_speakers;
      float best_activation = 0.0f;
      for (std::size_t k = 0; k < padded_speakers; ++k) {
        const float activation = k < num_speakers ? activations.data(row, k) : 0.0f;
        if (binary(t, k) == 0.0f && (best == padded_speakers || activation > best_activation)) {
          best = k;
          best_activation = activation;
        }
      }
      binary(t, best) = 1.0f;
    }
  }
  const SlidingWindow window(
      activations.window[static_cast<std::int64_t>(activation_rows.first)].start,
      activations.window.duration(), activations.window.step());
  return {std::move(binary), window};
}

SlidingWindowFeature<float> reconstruct(const NdArray<float>& segmentations,
                                        const SlidingWindow& chunks,
                                        const NdArray<int>& hard_clusters,
                                        const SlidingWindowFeature<int>& count) {
  return to_diarization(clustered_activations(segmentations, chunks, hard_clusters, count.window),
                        count);
}

}  // namespace parley::frames
