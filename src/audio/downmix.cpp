#include "audio/downmix.h"

#include <algorithm>

#include "core/error.h"

namespace parley::audio {
namespace {

// Every channel count takes the same steps: a double sum that starts at 0.0 (so that two -0.0
// channels give +0.0, as they always have), then one float multiplication. A fixed count lets the
// compiler unroll and vectorize those steps without changing a result bit.
template <std::size_t kChannels>
void average_fixed(std::span<const float> interleaved, float scale, std::span<float> mono) {
  const float* frame_start = interleaved.data();
  for (float& out : mono) {
    double sum = 0.0;
    for (std::size_t channel = 0; channel < kChannels; ++channel) sum += frame_start[channel];
    out = static_cast<float>(sum) * scale;
    frame_start += kChannels;
  }
}

void average_any(std::span<const float> interleaved, std::size_t channels, float scale,
                 std::span<float> mono) {
  const float* frame_start = interleaved.data();
  for (float& out : mono) {
    double sum = 0.0;
    for (std::size_t channel = 0; channel < channels; ++channel) sum += frame_start[channel];
    out = static_cast<float>(sum) * scale;
    frame_start += channels;
  }
}

}  // namespace

void downmix_to_mono(std::span<const float> interleaved, int channels, std::span<float> mono) {
  if (channels <= 0) fail("downmix_to_mono: {} channels; need at least one", channels);
  const auto channel_count = static_cast<std::size_t>(channels);
  const std::size_t frames = interleaved.size() / channel_count;
  if (mono.size() != frames || interleaved.size() % channel_count != 0) {
    fail("downmix_to_mono: {} interleaved samples of {} channels do not fill {} mono samples",
         interleaved.size(), channels, mono.size());
  }
  if (channel_count == 1) {
    std::copy(interleaved.begin(), interleaved.end(), mono.begin());
    return;
  }
  const float scale = 1.0f / static_cast<float>(channels);
  switch (channel_count) {
    case 2:
      average_fixed<2>(interleaved, scale, mono);
      return;
    case 4:
      average_fixed<4>(interleaved, scale, mono);
      return;
    case 6:
      average_fixed<6>(interleaved, scale, mono);
      return;
    default:
      average_any(interleaved, channel_count, scale, mono);
  }
}

}  // namespace parley::audio
