#include "stream/pcm_input.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "audio/downmix.h"
#include "core/error.h"

namespace parley::stream {

std::size_t pcm_sample_bytes(PcmFormat format) { return format == PcmFormat::kS16le ? 2 : 4; }

void push_pcm(StreamDiarizer& diarizer, std::span<const unsigned char> bytes, PcmFormat format,
              int channels, std::optional<StreamClock::time_point> arrival) {
  if (channels < 1) fail("raw audio needs at least 1 channel (got {})", channels);
  const std::size_t sample_bytes = pcm_sample_bytes(format);
  const std::size_t frame_bytes = sample_bytes * static_cast<std::size_t>(channels);
  if (bytes.size() % frame_bytes != 0) {
    fail(
        "{} bytes of raw audio are not whole frames of {} bytes (the sample size times the "
        "channels)",
        bytes.size(), frame_bytes);
  }
  // The bytes are copied into aligned samples: a message's or a read's bytes need not be aligned
  // (little-endian hosts only: x86, arm64).
  std::vector<float> samples(bytes.size() / sample_bytes);
  if (format == PcmFormat::kS16le) {
    std::vector<std::int16_t> pcm(samples.size());
    std::memcpy(pcm.data(), bytes.data(), bytes.size());
    for (std::size_t i = 0; i < pcm.size(); ++i) samples[i] = static_cast<float>(pcm[i]) / 32768.0F;
  } else {
    std::memcpy(samples.data(), bytes.data(), bytes.size());
    for (std::size_t i = 0; i < samples.size(); ++i) {
      if (!std::isfinite(samples[i])) {
        fail(
            "f32le audio holds a sample that is not a number (NaN or infinity); send finite "
            "samples in [-1, 1]");
      }
    }
  }
  if (channels == 1) return diarizer.push(samples, arrival);
  std::vector<float> mono(samples.size() / static_cast<std::size_t>(channels));
  audio::downmix_to_mono(samples, channels, mono);
  diarizer.push(mono, arrival);
}

}  // namespace parley::stream
