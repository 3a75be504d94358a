#pragma once
// Discrete (0/1 per frame and speaker) diarization -> speaker turns, as pyannote does it:
// SpeakerDiarizationMixin.to_annotation (pipelines/utils/diarization.py) binarizes with
// onset = offset = 0.5, then SpeakerDiarization.apply (pipelines/speaker_diarization.py)
// renames the speaker indices to SPEAKER_00, SPEAKER_01, ... in the order of
// Annotation.labels(), which sorts the indices *as strings* ("0" < "1" < "10" < "2").
#include <vector>

#include "frames/output.h"
#include "frames/sliding_window.h"

namespace parley::frames {

// discrete: [num_frames, num_speakers] on its frames window. Turns carry `cluster` (the
// column) and an empty `speaker`, in pyannote's order (by start, end, then speaker column).
std::vector<Turn> to_turns(const SlidingWindowFeature<float>& discrete,
                           double min_duration_on = 0.0, double min_duration_off = 0.0);

// The speaker columns present in `turns`, in SPEAKER_00, SPEAKER_01, ... order.
std::vector<int> speaker_order(const std::vector<Turn>& turns);

// Sets each turn's `speaker` to SPEAKER_<position of its cluster in order, 2 digits>. Turns of
// clusters missing from `order` keep their cluster number as label (pyannote keeps unmapped
// labels unchanged).
void label_speakers(std::vector<Turn>& turns, const std::vector<int>& order);

// "SPEAKER_07"
std::string speaker_label(std::size_t index);

}  // namespace parley::frames
