#pragma once
// final_recluster's archive (docs/live.md): the batch pipeline's diarization of a whole stream,
// its speakers named after the live speakers they overlap most, so that a listener who saw
// SPEAKER_01 live finds that voice under SPEAKER_01 in the archive wherever the two agree.
#include <span>

#include "frames/output.h"
#include "pipeline/diarizer.h"

namespace parley::stream {

// `batch` with its speakers renamed. The labels stay 0 .. k-1, k the batch's speakers, so the
// speaker count, the embedding rows (row i: SPEAKER_i's, reordered from the batch's) and the
// RTTM's labels are those `parley diarize` gives, without gaps:
// - a batch speaker takes the label of the live speaker whose turns overlap its own the longest
//   (optimal one-to-one assignment of total overlap; only positive overlaps pair);
// - a batch speaker paired with no live speaker takes the lowest label left, in batch order;
// - a live speaker paired with no batch speaker (no batch turns under its speech, or merged into
//   a batch speaker that another live speaker overlaps more), or one numbered k or more, does not
//   appear: its label may go to a batch speaker it never overlapped.
// `live_turns`: the live result's turns, speaker_index the live label. Everything else of the
// batch result (times, exclusive turns renamed alike, stage times) is kept.
pipeline::DiarizationResult under_live_names(std::span<const frames::Turn> live_turns,
                                             pipeline::DiarizationResult batch);

}  // namespace parley::stream
