#include "cluster/inactive_speakers.h"

#include "core/error.h"

namespace parley::cluster {

void check_hard_clusters_shape(const NdArray<float>& segmentations,
                               const NdArray<int>& hard_clusters, std::string_view stage) {
  if (segmentations.rank() != 3) {
    fail("{}: segmentations must be [chunks, frames, speakers] (got {} dimensions)", stage,
         segmentations.rank());
  }
  if (hard_clusters.rank() != 2 || hard_clusters.dim(0) != segmentations.dim(0) ||
      hard_clusters.dim(1) != segmentations.dim(2)) {
    fail(
        "{}: hard clusters must be [{}, {}] (chunks x local speakers) to match the "
        "segmentations; the clustering ran on different segmentations",
        stage, segmentations.dim(0), segmentations.dim(2));
  }
}

std::vector<bool> inactive_speakers(const NdArray<float>& segmentations) {
  if (segmentations.rank() != 3) {
    fail(
        "inactive speakers: segmentations must be [chunks, frames, speakers] (got {} "
        "dimensions)",
        segmentations.rank());
  }
  const std::size_t chunk_count = segmentations.dim(0);
  const std::size_t frame_count = segmentations.dim(1);
  const std::size_t speaker_count = segmentations.dim(2);
  std::vector<bool> inactive(chunk_count * speaker_count);
  for (std::size_t chunk = 0; chunk < chunk_count; ++chunk) {
    for (std::size_t speaker = 0; speaker < speaker_count; ++speaker) {
      float total = 0.0f;
      for (std::size_t frame = 0; frame < frame_count; ++frame) {
        total += segmentations(chunk, frame, speaker);
      }
      inactive[chunk * speaker_count + speaker] = total == 0.0f;
    }
  }
  return inactive;
}

NdArray<int> mask_inactive_speakers(const NdArray<float>& binarized,
                                    const NdArray<int>& hard_clusters) {
  check_hard_clusters_shape(binarized, hard_clusters, "inactive speakers");
  const std::vector<bool> inactive = inactive_speakers(binarized);
  NdArray<int> masked = hard_clusters;
  for (std::size_t i = 0; i < inactive.size(); ++i) {
    if (inactive[i]) masked(i) = kInactiveSpeaker;
  }
  return masked;
}

}  // namespace parley::cluster
