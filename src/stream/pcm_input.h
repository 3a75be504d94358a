#pragma once
// Headerless PCM bytes into a stream diarizer: the one reading of raw audio that `parley stream`
// (--raw, and WAV on standard input) and the WebSocket of `parley serve` share, so that both take
// and refuse the same audio.
#include <cstddef>
#include <optional>
#include <span>

#include "stream/stream_diarizer.h"

namespace parley::stream {

// The sample formats of raw audio: little-endian, channels interleaved.
enum class PcmFormat { kS16le, kF32le };

std::size_t pcm_sample_bytes(PcmFormat format);

// Pushes `bytes`, whole frames of `channels` interleaved samples of `format`, to `diarizer`:
// channels averaged to mono as a decoded file's are (audio/downmix.h), f32le as it is, s16le
// divided by 32768. A NaN or infinite f32le sample is refused (parley::Error, before anything of
// `bytes` is pushed): a raw source that sends one is broken, and a NaN would spread through the
// resampler and the networks. Throws too when `bytes` is not whole frames.
void push_pcm(StreamDiarizer& diarizer, std::span<const unsigned char> bytes, PcmFormat format,
              int channels, std::optional<StreamClock::time_point> arrival = {});

}  // namespace parley::stream
