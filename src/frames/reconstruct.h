#pragma once
// From clustered local speakers back to one discrete diarization of the recording
// (pyannote.audio pipelines/speaker_diarization.py: SpeakerDiarization.reconstruct and the
// inactive-speaker masking in apply; pipelines/utils/diarization.py: to_diarization).
//
//   1. cluster::mask_inactive_speakers (cluster/inactive_speakers.h): a local speaker never
//      active in its chunk gets cluster -2 (done by diarize_frames, see postprocess.h).
//   2. clustered_segmentations: per chunk and global cluster k, the frame-wise max of the
//      activations of the chunk's local speakers assigned to k; NaN for clusters the chunk does
//      not contain (so they do not count as covered when aggregating).
//   3. to_diarization: sum the clustered segmentations over overlapping chunks (aggregate,
//      skip_average, missing 0), pad speakers up to the largest count, and per frame switch on
//      the `count` speakers with the largest sums; ties go to the lower speaker index (numpy's
//      argsort of -activations, which is stable for these short rows).
// The exclusive diarization (for transcripts; pyannote 4 `exclusive_speaker_diarization`) is
// the same reconstruction with every count capped at 1.
#include "core/ndarray.h"
#include "frames/sliding_window.h"

namespace parley::frames {

// Steps 2 and 3's sum at once: per frame of `frames` and global cluster k (num_clusters =
// max(hard_clusters) + 1, 0 if none), the sum over the chunks of their clustered segmentations
// (aggregate with skip_average, missing 0), without holding the [chunks, frames, clusters] array.
SlidingWindowFeature<float> clustered_activations(const NdArray<float>& segmentations,
                                                  const SlidingWindow& chunks,
                                                  const NdArray<int>& hard_clusters,
                                                  const SlidingWindow& frames);

// activations: clustered_activations on the count's frames; count: [num_frames] speakers per
// frame. Returns [num_frames, max(clusters, max count)] 0/1 on the count's frames.
SlidingWindowFeature<float> to_diarization(const SlidingWindowFeature<float>& activations,
                                           const SlidingWindowFeature<int>& count);

// SpeakerDiarization.reconstruct: clustered_activations + to_diarization. hard_clusters
// should already be masked (cluster::mask_inactive_speakers), as pyannote does before calling
// it.
SlidingWindowFeature<float> reconstruct(const NdArray<float>& segmentations,
                                        const SlidingWindow& chunks,
                                        const NdArray<int>& hard_clusters,
                                        const SlidingWindowFeature<int>& count);

}  // namespace parley::frames
