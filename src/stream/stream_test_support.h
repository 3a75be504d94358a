#pragma once
// The stream tests' fake networks and synthetic conversations (stream_diarizer_test.cpp,
// stream_heap_test.cpp).
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "stream/stream_diarizer.h"

namespace parley::stream::testing {

// Fake networks over a synthetic signal whose level says who speaks: 0 is silence, k * 0.1 is
// speaker k. A window's local speakers are its speakers in order of first appearance (at most
// 3, as segmentation-3.0's), each embedded as a noisy one-hot vector of its true identity.
class LevelModel : public WindowModel {
 public:
  WindowAnalysis analyze(std::span<const float> window) const override {
    constexpr std::size_t kFrames = 589;
    constexpr std::size_t kDimension = 16;
    NdArray<float> segmentation({kFrames, 3});
    std::vector<int> local;  // true speaker of each local slot
    for (std::size_t f = 0; f < kFrames; ++f) {
      const std::size_t centre = std::min(window.size() - 1, f * 270 + 495);
      const int who = static_cast<int>(std::lround(window[centre] * 10.0F));
      if (who <= 0) continue;
      auto slot = std::find(local.begin(), local.end(), who);
      if (slot == local.end()) {
        if (local.size() == 3) continue;
        local.push_back(who);
        slot = local.end() - 1;
      }
      segmentation(f, static_cast<std::size_t>(slot - local.begin())) = 1.0F;
    }
    NdArray<float> embeddings({3, kDimension}, std::nanf(""));
    for (std::size_t l = 0; l < local.size(); ++l) {
      for (std::size_t d = 0; d < kDimension; ++d) {
        // Small, deterministic noise that depends on the window's content.
        const float noise = 0.05F * std::sin(static_cast<float>(d * 7 + l) + window[80000]);
        embeddings(l, d) = (static_cast<int>(d) == local[l] ? 1.0F : 0.0F) + noise;
      }
    }
    return {std::move(segmentation), std::move(embeddings)};
  }
};

// A conversation: turns of a few seconds each among `speakers`, with pauses.
inline std::vector<float> conversation(double seconds, int speakers, double rate = 16000.0,
                                       unsigned seed = 1) {
  std::vector<float> audio(static_cast<std::size_t>(seconds * rate), 0.0F);
  std::mt19937 random(seed);
  std::size_t at = 0;
  while (at < audio.size()) {
    const int who = 1 + static_cast<int>(random() % static_cast<unsigned>(speakers));
    const auto length =
        static_cast<std::size_t>((2.0 + static_cast<double>(random() % 40) / 10.0) * rate);
    const auto pause = static_cast<std::size_t>(static_cast<double>(random() % 10) / 10.0 * rate);
    for (std::size_t i = at; i < std::min(audio.size(), at + length); ++i) {
      audio[i] = 0.1F * static_cast<float>(who);
    }
    at += length + pause;
  }
  return audio;
}

}  // namespace parley::stream::testing
