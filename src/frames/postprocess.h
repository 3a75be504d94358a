#pragma once
// The frame-level end of the community-1 pipeline, after clustering, in one call: what
// SpeakerDiarization.apply (pyannote.audio pipelines/speaker_diarization.py) does from
// "count.data = np.minimum(count.data, max_speakers)" to the renamed annotations.
//
// How the orchestrator drives the frame stages (all in namespace parley::pipeline):
//   ChunkPlan plan = plan_chunks(num_samples, 16000);          // 10 s chunks, 1 s step (2 s: fast)
//   for c in 0..plan.num_chunks(): copy_chunk(waveform, plan, c, buffer) -> model -> logits
//   NdArray<float> binarized = Powerset(3, 2).to_multilabel(logits);   // [chunks, 589, 3]
//   SlidingWindowFeature<int> count =
//       speaker_count(binarized, plan.chunks(), segmentation3_frames());
//   if (max_count(count.data) == 0) -> no speech: empty diarization, no embeddings needed
//   ... embeddings + clustering -> hard_clusters [chunks, 3] (-2 where unassigned) ...
//   FrameDiarization result = diarize_frames(binarized, plan.chunks(), hard_clusters, count, {});
//   eval::format_rttm(to_eval_turns(result.turns, uri)) / format_json(result.turns, ...)
#include <optional>
#include <vector>

#include "core/ndarray.h"
#include "frames/output.h"
#include "frames/sliding_window.h"

namespace parley::frames {

struct PostprocessOptions {
  // Upper bound on simultaneous speakers per frame (pyannote's max_speakers / num_speakers);
  // unset: no bound.
  std::optional<int> max_speakers;
  // Fill same-speaker gaps shorter than this (segmentation.min_duration_off; community-1: 0).
  double min_duration_off = 0.0;
};

struct FrameDiarization {
  SlidingWindowFeature<int> count;       // speakers per frame, capped at max_speakers
  NdArray<int> hard_clusters;            // with -2 for local speakers inactive in their chunk
  SlidingWindowFeature<float> discrete;  // [frames, speakers] 0/1
  SlidingWindowFeature<float> exclusive_discrete;  // same with at most one speaker per frame
  std::vector<Turn> turns;                         // speaker_diarization, labelled SPEAKER_00, ...
  std::vector<Turn> exclusive_turns;               // exclusive_speaker_diarization, same labels
  // speaker_order[i]: the cluster (column of `discrete`) named SPEAKER_<i>; reorder centroids
  // with it (a cluster >= the number of centroids gets a zero embedding, as pyannote pads).
  std::vector<int> speaker_order;
};

// binarized: [chunks, frames, local_speakers] hard activations on `chunks`; hard_clusters:
// [chunks, local_speakers] from clustering; count: speaker_count(binarized, ...).
FrameDiarization diarize_frames(const NdArray<float>& binarized, const SlidingWindow& chunks,
                                const NdArray<int>& hard_clusters,
                                const SlidingWindowFeature<int>& count,
                                const PostprocessOptions& options = {});

}  // namespace parley::frames
