#pragma once
// A time range of a recording, decoded alone: the audio a voiceprint is made of when the speaker
// talks in only part of a file (`parley voiceprint add --start --end`, POST /v1/voiceprints).
#include <filesystem>
#include <optional>
#include <vector>

#include "core/error.h"

namespace parley::audio {

// The range is well formed but holds nothing of this recording (it starts at or past the end):
// a fault of the range, not of the file, which callers may answer differently from a decode error.
class EmptyRangeError : public Error {
 public:
  using Error::Error;
};

// Throws parley::Error, saying what to change, unless 0 <= start and (when given) start < end,
// all finite. Callers check the range before any decoding with it.
void check_time_range(double start, std::optional<double> end);

// The 16 kHz mono samples of [start, end) seconds of `path` (end: none, to its end; an end past
// the recording stops there). Only the range is kept in memory. Throws check_time_range's errors,
// the decoder's (as MonoResampledStream), and EmptyRangeError when start is at or past the end.
std::vector<float> decode_range(const std::filesystem::path& path, double start,
                                std::optional<double> end);

}  // namespace parley::audio
