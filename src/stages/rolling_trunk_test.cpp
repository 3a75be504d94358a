#include "stages/rolling_trunk.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "graph/embedding_model_test_support.h"
#include "stages/fixed_point_mean.h"
#include "stages/trunk_test_support.h"

namespace parley::stages {
namespace {

constexpr std::size_t kRate = 16000;
constexpr std::size_t kWindow = 160000;

using testing::synthetic_recording;
using testing::test_model_config;

// The live diarizer's windows over `audio`: window k holds stream samples [k step - window,
// k step), zeros before the stream and after its end. `virtual_recording` is what they are
// cut from: window - step zeros, the audio, zeros up to the last window's end and `extra` more.
struct Windows {
  std::vector<float> virtual_recording;
  std::size_t step = 0;
  std::size_t count = 0;
  std::span<const float> window(std::size_t k) const {  // k from 1
    return std::span<const float>(virtual_recording).subspan((k - 1) * step, kWindow);
  }
};

Windows windows_over(const std::vector<float>& audio, std::size_t step, std::size_t extra = 0) {
  Windows w;
  w.step = step;
  w.count = (audio.size() + step - 1) / step;
  w.virtual_recording.assign((w.count - 1) * step + kWindow + extra, 0.0f);
  std::copy(audio.begin(), audio.end(), w.virtual_recording.begin() + (kWindow - step));
  return w;
}

// Log mel (uncentred) of every fbank frame of the virtual recording, and its fixed-point
// prefix sums per bin.
struct Reference {
  explicit Reference(EmbeddingExtractor& e, const Windows& windows) : extractor(e) {
    FbankConfig uncentred = e.config().fbank;
    uncentred.subtract_mean = false;
    const Fbank fbank(uncentred);
    mel = fbank.compute(windows.virtual_recording);
    frames = mel.dim(0);
    bins = mel.dim(1);
    prefix.assign((frames + 1) * bins, 0);
    for (std::size_t f = 0; f < frames; ++f) {
      for (std::size_t m = 0; m < bins; ++m) {
        prefix[(f + 1) * bins + m] = prefix[f * bins + m] + to_fixed_point(mel(f, m));
      }
    }
  }

  std::vector<double> window_mean(std::size_t s) const {
    std::vector<double> mean(bins);
    for (std::size_t m = 0; m < bins; ++m) {
      mean[m] = fixed_point_mean(prefix[(s + 998) * bins + m] - prefix[s * bins + m], 998);
    }
    return mean;
  }

  // One trunk pass over fbank frames [first, end) centred with the mean of the window at s:
  // [pooled features, grid frames], grid frame first / 8 at column 0.
  NdArray<float> pass(std::size_t first, std::size_t end, std::size_t s) const {
    const std::vector<double> mean = window_mean(s);
    NdArray<float> features({1, end - first, bins});
    for (std::size_t f = first; f < end; ++f) {
      for (std::size_t m = 0; m < bins; ++m) {
        features(0, f - first, m) = static_cast<float>(static_cast<double>(mel(f, m)) - mean[m]);
      }
    }
    const NdArray<float> out = extractor.trunk_frames_from_features(features);
    return NdArray<float>({out.dim(1), out.dim(2)}, std::vector<float>(out.values()));
  }

  EmbeddingExtractor& extractor;
  NdArray<float> mel;
  std::size_t frames = 0;
  std::size_t bins = 0;
  std::vector<std::int64_t> prefix;
};

struct Invariant {
  double worst = 0.0;      // max |held - reference|
  double magnitude = 0.0;  // max |reference|
  std::size_t settled_checked = 0;
  std::size_t tail_checked = 0;
};

// Steps a RollingTrunk through `audio` and checks, after every step, every held frame against
// one pass over [8 floor(s_w / 8), end) centred with window w's mean, w the step it was last
// computed in: end = T_w for the tail (the window's own right edge and padding), and for
// settled frames end = T_w + 64 (more audio to the right must not change a settled frame).
Invariant check_invariant(EmbeddingExtractor& extractor, const std::vector<float>& audio,
                          std::size_t step, std::size_t margin) {
  const Windows windows = windows_over(audio, step, 64 * 160);
  const Reference reference(extractor, windows);
  RollingTrunkConfig config;
  config.step_samples = step;
  config.margin_frames = margin;
  RollingTrunk trunk(extractor, config);
  const std::size_t S = step / 160;
  std::map<std::pair<std::size_t, bool>, NdArray<float>> passes;  // (w, extended)
  auto pass_of = [&](std::size_t w, bool extended) -> const NdArray<float>& {
    const auto key = std::make_pair(w, extended);
    auto found = passes.find(key);
    if (found == passes.end()) {
      const std::size_t s = (w - 1) * S;
      const std::size_t first = s / 8 * 8;
      found = passes.emplace(key, reference.pass(first, s + 998 + (extended ? 64 : 0), s)).first;
    }
    return found->second;
  };
  Invariant result;
  for (std::size_t k = 1; k <= windows.count; ++k) {
    trunk.advance(windows.window(k));
    // The running mean is the prefix sum's, bit for bit.
    const std::vector<double> mean = trunk.window_mean();
    EXPECT_EQ(0, std::memcmp(mean.data(), reference.window_mean((k - 1) * S).data(),
                             mean.size() * sizeof(double)))
        << "step " << k;
    for (std::size_t j = trunk.first_held(); j < trunk.first_held() + trunk.held(); ++j) {
      const std::size_t w = trunk.held_step(j);
      const bool settled = j < trunk.first_unsettled();
      const NdArray<float>& ref = pass_of(w, settled);
      const std::size_t column = j - ((w - 1) * S) / 8;
      EXPECT_LT(column, ref.dim(1));
      if (column >= ref.dim(1)) continue;
      const std::span<const float> held = trunk.held_frame(j);
      for (std::size_t f = 0; f < held.size(); ++f) {
        const double r = ref(f, column);
        result.magnitude = std::max(result.magnitude, std::abs(r));
        result.worst = std::max(result.worst, std::abs(static_cast<double>(held[f]) - r));
      }
      ++(settled ? result.settled_checked : result.tail_checked);
    }
    // Memory: passes of windows no held frame refers to are dropped.
    while (!passes.empty() && passes.begin()->first.first + 40 < k) passes.erase(passes.begin());
  }
  return result;
}

// The core property: the cache is a set of frames each equal to one trunk pass over its own
// window (a prefix of it when the window is off the grid), at steps of every phase pattern
// (0.5 s: four phases; 1 s: two; 0.33 s: eight), with the trunk's own reach and with wider
// forced margins.
TEST(RollingTrunk, FramesEqualOnePassOfTheirWindow) {
  const auto audio = synthetic_recording(60 * kRate);
  EmbeddingExtractor extractor(graph::testing::make_test_embedding_model(), "test model",
                               test_model_config());
  for (const std::size_t step : {8000u, 16000u, 5280u}) {
    for (const std::size_t margin : {0u, 16u, 32u}) {
      const Invariant result = check_invariant(extractor, audio, step, margin);
      const std::string name = "step_" + std::to_string(step) + "_margin_" + std::to_string(margin);
      RecordProperty(name + "_max_abs_difference", std::to_string(result.worst));
      EXPECT_GT(result.settled_checked, 1000u) << name;
      EXPECT_GT(result.tail_checked, 50u) << name;
      EXPECT_LE(result.worst, 1e-5 * result.magnitude) << name;
    }
  }
}

// Settled frames are kept, never recomputed: their bytes do not change until they leave.
TEST(RollingTrunk, SettledFramesNeverChange) {
  const auto audio = synthetic_recording(40 * kRate);
  EmbeddingExtractor extractor(graph::testing::make_test_embedding_model(), "test model",
                               test_model_config());
  const Windows windows = windows_over(audio, 8000);
  RollingTrunk trunk(extractor, RollingTrunkConfig{});
  std::map<std::size_t, std::vector<float>> settled;
  std::size_t compared = 0;
  for (std::size_t k = 1; k <= windows.count; ++k) {
    trunk.advance(windows.window(k));
    for (auto it = settled.begin(); it != settled.end();) {
      if (it->first < trunk.first_held()) {
        it = settled.erase(it);
        continue;
      }
      const std::span<const float> now = trunk.held_frame(it->first);
      ASSERT_EQ(0, std::memcmp(now.data(), it->second.data(), now.size_bytes()))
          << "grid frame " << it->first << " changed at step " << k;
      ++compared;
      ++it;
    }
    for (std::size_t j = trunk.first_held(); j < trunk.first_unsettled(); ++j) {
      if (settled.count(j) == 0) {
        const std::span<const float> frame = trunk.held_frame(j);
        settled.emplace(j, std::vector<float>(frame.begin(), frame.end()));
      }
    }
  }
  EXPECT_GT(compared, 5000u);
}

// Embeddings and trunk frames are the same bits with 1 and 3 threads (fbank tasks, ONNX
// Runtime's intra-op threads).
TEST(RollingTrunk, SameForAnyThreadCount) {
  const auto audio = synthetic_recording(25 * kRate);
  const Windows windows = windows_over(audio, 8000);
  NdArray<float> segmentation({1, 589, 3}, 0.0f);
  for (std::size_t f = 0; f < 589; ++f) {
    segmentation(0, f, (f / 97) % 3) = 1.0f;
    if (f % 5 == 0) segmentation(0, f, 2) = 1.0f;
  }
  std::vector<std::vector<float>> outputs;
  for (int threads : {1, 3}) {
    EmbeddingExtractor extractor(graph::testing::make_test_embedding_model(), "test model",
                                 test_model_config(threads));
    RollingTrunkConfig config;
    config.threads = threads;
    RollingTrunk trunk(extractor, config);
    std::vector<float> all;
    for (std::size_t k = 1; k <= windows.count; ++k) {
      trunk.advance(windows.window(k));
      const NdArray<float> frames = trunk.window_frames();
      const NdArray<float> embeddings = trunk.embed(segmentation);
      all.insert(all.end(), frames.values().begin(), frames.values().end());
      all.insert(all.end(), embeddings.values().begin(), embeddings.values().end());
    }
    outputs.push_back(std::move(all));
  }
  ASSERT_EQ(outputs[0].size(), outputs[1].size());
  EXPECT_EQ(0, std::memcmp(outputs[0].data(), outputs[1].data(), outputs[0].size() * 4));
}

// What a stream holds does not grow: the same bytes after 2 and after 10 minutes.
TEST(RollingTrunk, MemoryIsConstant) {
  const auto audio = synthetic_recording(10 * 60 * kRate);
  EmbeddingExtractor extractor(graph::testing::make_test_embedding_model(), "test model",
                               test_model_config());
  const Windows windows = windows_over(audio, 8000);
  RollingTrunk trunk(extractor, RollingTrunkConfig{});
  std::size_t at_two_minutes = 0;
  std::size_t held_at_two_minutes = 0;
  for (std::size_t k = 1; k <= windows.count; ++k) {
    trunk.advance(windows.window(k));
    if (k == 240) {
      at_two_minutes = trunk.bytes();
      held_at_two_minutes = trunk.held();
    }
  }
  EXPECT_GT(at_two_minutes, 0u);
  EXPECT_EQ(trunk.bytes(), at_two_minutes);
  EXPECT_EQ(trunk.held(), held_at_two_minutes);
  // The window's 125 frames and a tail of a step's worth at most.
  EXPECT_LE(trunk.held(), 125u + 50u / 8u + 3u);
}

// The speed proxy: after the first step (the whole window), a pass runs over the step's new
// fbank frames and the trunk's reach on both sides, not over the window.
TEST(RollingTrunk, WorkPerStep) {
  const auto audio = synthetic_recording(30 * kRate);
  EmbeddingExtractor extractor(graph::testing::make_test_embedding_model(), "test model",
                               test_model_config());
  for (const std::size_t margin : {0u, 32u}) {
    const Windows windows = windows_over(audio, 8000);
    RollingTrunkConfig config;
    config.margin_frames = margin;
    RollingTrunk trunk(extractor, config);
    const std::size_t bound = trunk.step_frames() + 2 * trunk.left_reach() + 8;
    trunk.advance(windows.window(1));
    EXPECT_EQ(trunk.last_pass_frames(), 998u);
    std::size_t most = 0;
    for (std::size_t k = 2; k <= windows.count; ++k) {
      trunk.advance(windows.window(k));
      most = std::max(most, trunk.last_pass_frames());
    }
    RecordProperty("margin_" + std::to_string(margin) + "_most_frames_per_step",
                   std::to_string(most));
    EXPECT_LE(most, bound);
    EXPECT_GE(most, trunk.step_frames());
  }
}

// On a GPU every new input length is a first run that goes alone in the process while cuDNN
// picks its kernels (runtime/new_shape_gate.h): the passes after the first take only as many
// lengths as the step has phases against the stride (0.5 s = 50 fbank frames: 4 phases of 8),
// here with ResNet34's reach (112 frames to the left, about as many to the right), and none is
// padded towards a fixed length.
TEST(RollingTrunk, PassesTakeOneLengthPerPhaseOfTheStep) {
  const auto audio = synthetic_recording(40 * kRate);
  EmbeddingExtractor extractor(graph::testing::make_test_embedding_model(), "test model",
                               test_model_config());
  const Windows windows = windows_over(audio, 8000);
  RollingTrunkConfig config;
  config.margin_frames = 108;
  RollingTrunk trunk(extractor, config);
  ASSERT_EQ(trunk.left_reach(), 112u);
  std::set<std::size_t> lengths;
  trunk.advance(windows.window(1));
  for (std::size_t k = 2; k <= windows.count; ++k) {
    trunk.advance(windows.window(k));
    lengths.insert(trunk.last_pass_frames());
  }
  RecordProperty("pass_lengths", fmt::format("{}", fmt::join(lengths, ",")));
  EXPECT_LE(lengths.size(), 4u);
  EXPECT_LE(*lengths.rbegin(), trunk.step_frames() + 2 * trunk.left_reach());
}

TEST(RollingTrunk, RefusesStepsOffTheFbankGrid) {
  EmbeddingExtractor extractor(graph::testing::make_test_embedding_model(), "test model",
                               test_model_config());
  RollingTrunkConfig config;
  config.step_samples = 8001;
  EXPECT_FALSE(rolling_trunk_supported(extractor, 8001));
  EXPECT_TRUE(rolling_trunk_supported(extractor, 8000));
  try {
    RollingTrunk trunk(extractor, config);
    FAIL() << "a step off the fbank grid must be refused";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("window embedding"), std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace parley::stages
