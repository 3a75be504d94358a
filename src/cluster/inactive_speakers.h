#pragma once
// Which local speakers take no part in a chunk, by pyannote's one definition.
//
// pyannote.audio 4.x uses the same test in both places it needs one:
//   - pipelines/clustering.py, BaseClustering.assign_embeddings: before the constrained
//     assignment, `soft_clusters[segmentations.data.sum(1) == 0] = const` (inactive speakers
//     score below every valid score, so they get clusters last);
//   - pipelines/speaker_diarization.py, SpeakerDiarization.apply, right after clustering and
//     before reconstruct: `inactive_speakers = np.sum(binarized_segmentations.data, axis=1) == 0`
//     then `hard_clusters[inactive_speakers] = -2`.
// Clustering returns the raw hard clusters; the pipeline masks them (frames::diarize_frames),
// as pyannote's apply does.
#include <string_view>
#include <vector>

#include "core/ndarray.h"

namespace parley::cluster {

// Cluster id of local speakers that take no part in the reconstruction (also what
// constrained_argmax leaves on speakers that got no cluster, as pyannote does).
inline constexpr int kInactiveSpeaker = -2;

// segmentations: [chunks, frames, local_speakers]. True at [chunk, speaker] (row-major) where
// the speaker's activations sum to exactly 0 over the chunk's frames (pyannote's
// `np.sum(segmentations, axis=1) == 0`, summed in float32 in frame order as numpy reduces that
// axis). On binarized (0/1) input this is "no active frame"; on other input it follows numpy:
// activations that cancel (1 and -1) count as inactive, a NaN activation as active.
std::vector<bool> inactive_speakers(const NdArray<float>& segmentations);

// Fails, naming `stage`, unless segmentations is [chunks, frames, local_speakers] and
// hard_clusters [chunks, local_speakers] of the same chunks and local speakers.
void check_hard_clusters_shape(const NdArray<float>& segmentations,
                               const NdArray<int>& hard_clusters, std::string_view stage);

// hard_clusters: [chunks, local_speakers]. Returns it with kInactiveSpeaker wherever
// inactive_speakers(binarized) holds. Fails when the shapes do not match.
NdArray<int> mask_inactive_speakers(const NdArray<float>& binarized,
                                    const NdArray<int>& hard_clusters);

}  // namespace parley::cluster
