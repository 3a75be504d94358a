#pragma once
// num_speakers / min_speakers / max_speakers, resolved as pyannote's set_num_speakers
// (pipelines/utils/diarization.py): num_speakers overrides both bounds, min defaults to 1 and
// max to unbounded, and equal bounds fix the number.
#include <optional>
#include <string>

namespace parley::cluster {

// The largest speaker count a caller may ask for: far beyond any recording, and low enough that
// the zero rows a requested count adds (frames x speakers) cannot exhaust memory.
inline constexpr int kMaxSpeakerCount = 1000;

struct SpeakerCountConstraints {
  std::optional<int> num_speakers;
  std::optional<int> min_speakers;
  std::optional<int> max_speakers;

  // Fails, in the fields' words, on a count outside 1..kMaxSpeakerCount or bounds that contradict.
  void validate() const;
  std::string describe() const;
  int resolved_min() const;
  std::optional<int> resolved_max() const;  // nullopt: unbounded
  std::optional<int> resolved_num() const;  // set when the bounds coincide
};

}  // namespace parley::cluster
