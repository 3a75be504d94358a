#include "stream/live_names.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "core/linear_assignment.h"
#include "frames/segments.h"

namespace parley::stream {

pipeline::DiarizationResult under_live_names(std::span<const frames::Turn> live_turns,
                                             pipeline::DiarizationResult batch) {
  std::size_t speakers = batch.speaker_count;
  for (const auto* turns : {&batch.turns, &batch.exclusive_turns}) {
    for (const frames::Turn& t : *turns) {
      speakers = std::max(speakers, static_cast<std::size_t>(t.speaker_index + 1));
    }
  }
  // Live labels past the batch's count cannot be kept without a gap.
  std::size_t live_labels = 0;
  for (const frames::Turn& t : live_turns) {
    live_labels = std::max(live_labels, static_cast<std::size_t>(t.speaker_index + 1));
  }
  live_labels = std::min(live_labels, speakers);

  std::vector<std::optional<std::size_t>> name(speakers);
  std::vector<bool> used(speakers, false);
  if (speakers > 0 && live_labels > 0) {
    NdArray<double> overlap({speakers, live_labels}, 0.0);
    for (const frames::Turn& b : batch.turns) {
      for (const frames::Turn& l : live_turns) {
        if (l.speaker_index < 0 || static_cast<std::size_t>(l.speaker_index) >= live_labels) {
          continue;
        }
        const double both = std::min(b.end, l.end) - std::max(b.start, l.start);
        if (both > 0.0) {
          overlap(static_cast<std::size_t>(b.speaker_index),
                  static_cast<std::size_t>(l.speaker_index)) += both;
        }
      }
    }
    const Assignment pairs = linear_sum_assignment(overlap, AssignmentGoal::maximize);
    for (std::size_t k = 0; k < pairs.rows.size(); ++k) {
      if (overlap(pairs.rows[k], pairs.cols[k]) <= 0.0) continue;
      name[pairs.rows[k]] = pairs.cols[k];
      used[pairs.cols[k]] = true;
    }
  }
  std::size_t lowest = 0;
  for (std::size_t b = 0; b < speakers; ++b) {
    if (name[b]) continue;
    while (used[lowest]) ++lowest;
    name[b] = lowest;
    used[lowest] = true;
  }

  for (auto* turns : {&batch.turns, &batch.exclusive_turns}) {
    for (frames::Turn& t : *turns) {
      const std::size_t n = *name[static_cast<std::size_t>(t.speaker_index)];
      t.speaker = frames::speaker_label(n);
      t.speaker_index = static_cast<int>(n);
    }
  }
  const NdArray<float>& rows = batch.speaker_embeddings;
  if (rows.rank() == 2 && rows.dim(0) == speakers) {
    const std::size_t dimension = rows.dim(1);
    NdArray<float> renamed({speakers, dimension});
    for (std::size_t b = 0; b < speakers; ++b) {
      std::copy_n(rows.data() + b * dimension, dimension, renamed.data() + *name[b] * dimension);
    }
    batch.speaker_embeddings = std::move(renamed);
  }
  batch.speaker_count = speakers;
  return batch;
}

}  // namespace parley::stream
