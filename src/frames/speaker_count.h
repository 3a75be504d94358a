#pragma once
// Frame-level number of simultaneous speakers (pyannote.audio pipelines/utils/diarization.py,
// SpeakerDiarizationMixin.speaker_count).
//
// Per chunk and frame, the binarized local activations are summed over the local speakers; the
// chunks are trimmed by `warm_up` (fractions of the chunk; community-1 passes (0, 0)), averaged
// over the overlapping chunks (Inference.aggregate without Hamming window, missing frames 0)
// and rounded half-to-even (np.rint) to an integer count per frame of the recording.
#include <cstdint>
#include <utility>

#include "core/ndarray.h"
#include "frames/sliding_window.h"

namespace parley::frames {

// binarized: [num_chunks, frames_per_chunk, local_speakers] 0/1 activations on `chunks`
// (the hard powerset decoding of the segmentation model); frames: the model's receptive
// field (segmentation3_frames()). Returns counts [num_frames] on
// SlidingWindow(chunks.start + warm_up.first * chunks.duration, frames.duration, frames.step).
SlidingWindowFeature<int> speaker_count(const NdArray<float>& binarized,
                                        const SlidingWindow& chunks, const SlidingWindow& frames,
                                        std::pair<double, double> warm_up = {0.0, 0.0});

// Caps every count at max_speakers (pyannote caps at the max_speakers bound before
// reconstruction; max_speakers = 1 gives the count of the exclusive diarization).
NdArray<int> cap_count(const NdArray<int>& count, int max_speakers);

// Largest count (0 when empty): pyannote returns an empty diarization when it is 0.
int max_count(const NdArray<int>& count);

}  // namespace parley::frames
