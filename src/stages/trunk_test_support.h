#pragma once
// Tests only: what the shared and rolling trunk tests feed the small test embedding model
// (graph/embedding_model_test_support.h).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "stages/embedding.h"

namespace parley::stages::testing {

// The test model's settings: WeSpeaker's variance epsilon, `threads` for fbank and ONNX Runtime.
inline EmbeddingConfig test_model_config(int threads = 1) {
  EmbeddingConfig config;
  config.variance_epsilon = 1e-7;
  config.feature_threads = threads;
  config.session.intra_op_threads = threads;
  return config;
}

// A 16 kHz recording with structure in time and frequency: tones changing every few hundred ms,
// a slow level change (so that per-chunk and per-window means differ) and noise.
inline std::vector<float> synthetic_recording(std::size_t samples) {
  constexpr double kRate = 16000.0;
  std::vector<float> audio(samples);
  std::uint32_t seed = 12345;
  for (std::size_t i = 0; i < samples; ++i) {
    seed = seed * 1664525u + 1013904223u;
    const double t = static_cast<double>(i) / kRate;
    const double pitch = 150.0 + 40.0 * static_cast<double>((i / 4000) % 7);
    const double level = 0.1 + 0.08 * std::sin(2.0 * 3.14159265358979 * t / 23.0);
    audio[i] = static_cast<float>(level * std::sin(2.0 * 3.14159265358979 * pitch * t) +
                                  0.01 * (static_cast<double>(seed >> 8) / 16777216.0 - 0.5));
  }
  return audio;
}

}  // namespace parley::stages::testing
