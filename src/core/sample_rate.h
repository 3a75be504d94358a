#pragma once
// The rate every model of the pipeline takes (segmentation-3.0 and the WeSpeaker embedding are
// trained on 16 kHz mono); audio/ resamples each recording to it.

namespace parley {

inline constexpr int kSampleRate = 16000;

}  // namespace parley
