#pragma once
// A diarization whose speaker centroids a test chooses, for the identification and linking tests.
#include <algorithm>
#include <vector>

#include "frames/segments.h"
#include "pipeline/diarizer.h"

namespace parley::identity::testing {

// Speaker i talks from 10 i to 10 i + 5; its centroid is `centroids[i]`.
inline pipeline::DiarizationResult result_with_centroids(
    const std::vector<std::vector<float>>& centroids) {
  pipeline::DiarizationResult result;
  result.uri = "call";
  const std::size_t dimension = centroids.empty() ? 0 : centroids.front().size();
  result.speaker_embeddings = NdArray<float>({centroids.size(), dimension});
  for (std::size_t i = 0; i < centroids.size(); ++i) {
    std::copy(centroids[i].begin(), centroids[i].end(),
              result.speaker_embeddings.data() + i * dimension);
    frames::Turn turn{10.0 * static_cast<double>(i), 10.0 * static_cast<double>(i) + 5.0,
                      frames::speaker_label(i), static_cast<int>(i), static_cast<int>(i)};
    result.turns.push_back(turn);
    result.exclusive_turns.push_back(turn);
  }
  result.speaker_count = centroids.size();
  return result;
}

}  // namespace parley::identity::testing
