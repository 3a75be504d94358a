#include "audio/audio_range.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

#include "audio/mono_resampled_stream.h"
#include "core/sample_rate.h"

namespace parley::audio {

void check_time_range(double start, std::optional<double> end) {
  if (!std::isfinite(start) || start < 0.0) {
    fail("the range's start {:.3f} s is not a time in the recording: give 0 or more seconds",
         start);
  }
  if (end && !std::isfinite(*end)) {
    fail("the range's end {:.3f} s is not a time in the recording: give seconds after the start",
         *end);
  }
  if (end && !(*end > start)) {
    fail(
        "the range ends at {:.3f} s, not after its start {:.3f} s: give an end after the start "
        "(or none, for the rest of the recording)",
        *end, start);
  }
}

std::vector<float> decode_range(const std::filesystem::path& path, double start,
                                std::optional<double> end) {
  check_time_range(start, end);
  MonoResampledStream stream(path);
  const auto first = static_cast<std::size_t>(start * kSampleRate);
  const std::size_t last =
      end ? static_cast<std::size_t>(*end * kSampleRate) : std::numeric_limits<std::size_t>::max();
  std::vector<float> block(1 << 16);
  std::vector<float> samples;
  std::size_t at = 0;
  while (at < last) {
    const std::size_t read = stream.read(block);
    if (read == 0) break;
    const std::size_t from = std::max(at, first);
    const std::size_t to = std::min(at + read, last);
    if (from < to) {
      samples.insert(samples.end(), block.begin() + static_cast<std::ptrdiff_t>(from - at),
                     block.begin() + static_cast<std::ptrdiff_t>(to - at));
    }
    at += read;
  }
  if (samples.empty()) {
    // Nothing kept means the stream ended before `first`: `at` is the whole length.
    const double length = static_cast<double>(at) / kSampleRate;
    throw EmptyRangeError(fmt::format(
        "the range starts at {:.3f} s, at or past the end of the recording ({:.3f} s long): give "
        "a start before {:.3f} s",
        start, length, length));
  }
  return samples;
}

}  // namespace parley::audio
