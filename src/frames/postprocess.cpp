#include "frames/postprocess.h"

#include "cluster/inactive_speakers.h"
#include "core/error.h"
#include "frames/reconstruct.h"
#include "frames/segments.h"
#include "frames/speaker_count.h"

namespace parley::frames {

FrameDiarization diarize_frames(const NdArray<float>& binarized, const SlidingWindow& chunks,
                                const NdArray<int>& hard_clusters,
                                const SlidingWindowFeature<int>& count,
                                const PostprocessOptions& options) {
  if (options.max_speakers.has_value() && *options.max_speakers < 1) {
    fail("diarization: max_speakers must be at least 1 (got {})", *options.max_speakers);
  }
  FrameDiarization result{
      .count = count,
      // SpeakerDiarization.apply masks inactive speakers between clustering and reconstruct
      .hard_clusters = cluster::mask_inactive_speakers(binarized, hard_clusters),
      .discrete = {},
      .exclusive_discrete = {},
      .turns = {},
      .exclusive_turns = {},
      .speaker_order = {},
  };
  if (options.max_speakers.has_value()) {
    result.count.data = cap_count(count.data, *options.max_speakers);
  }
  // reconstruct, twice: the two diarizations differ only in the count.
  const SlidingWindowFeature<float> activations =
      clustered_activations(binarized, chunks, result.hard_clusters, result.count.window);
  result.discrete = to_diarization(activations, result.count);
  result.turns = to_turns(result.discrete, 0.0, options.min_duration_off);

  const SlidingWindowFeature<int> exclusive_count{cap_count(result.count.data, 1),
                                                  result.count.window};
  result.exclusive_discrete = to_diarization(activations, exclusive_count);
  result.exclusive_turns = to_turns(result.exclusive_discrete, 0.0, options.min_duration_off);

  result.speaker_order = speaker_order(result.turns);
  label_speakers(result.turns, result.speaker_order);
  label_speakers(result.exclusive_turns, result.speaker_order);
  return result;
}

}  // namespace parley::frames
