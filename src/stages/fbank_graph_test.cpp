// graph/fbank_graph.h built from stages/fbank.h's own front end, run on the CPU provider
// against the host fbank: what an accelerator computes in front of the pooled trunk.
#include "graph/fbank_graph.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "graph/embedding_model_test_support.h"
#include "graph/graph_edit.h"
#include "graph/pooled_trunk_graph.h"
#include "runtime/onnx_session.h"
#include "stages/fbank.h"
#include "stages/shared_trunk.h"

namespace parley::stages {
namespace {

using Names = graph::FbankGraphNames;

// Speech-like and hard for float32: a loud low tone with its harmonics, a quiet high band 70 dB
// below it (the bins a TF32 product would drown), noise, a stretch of digital silence (the log
// floor) and a level that changes over time.
std::vector<float> test_samples(std::size_t count) {
  std::vector<float> samples(count);
  std::uint32_t seed = 777;
  for (std::size_t i = 0; i < count; ++i) {
    seed = seed * 1664525u + 1013904223u;
    const double t = static_cast<double>(i) / 16000.0;
    const double level = 0.3 + 0.25 * std::sin(2.0 * M_PI * t / 1.7);
    double value = 0.0;
    for (int harmonic = 1; harmonic <= 5; ++harmonic) {
      value += level / harmonic * std::sin(2.0 * M_PI * 140.0 * harmonic * t);
    }
    value += 3e-4 * std::sin(2.0 * M_PI * 6100.0 * t);
    value += 1e-3 * (static_cast<double>(seed >> 8) / 16777216.0 - 0.5);
    if (i >= 20000 && i < 24000) value = 0.0;
    samples[i] = static_cast<float>(value);
  }
  return samples;
}

struct GraphOutputs {
  NdArray<float> log_mel;   // [1, span, bins]
  NdArray<float> features;  // [1, frames, bins]
};

GraphOutputs run_front_end(const Fbank& fbank, const std::vector<float>& samples,
                           const std::vector<std::size_t>& own, const std::vector<std::size_t>& low,
                           const std::vector<std::size_t>& high) {
  const std::string model = graph::build_fbank_model(fbank.graph_spec(), "features");
  runtime::OnnxSession session(runtime::ModelBuffer{model, "fbank graph"}, {});
  NdArray<float> input({1, samples.size()}, std::vector<float>(samples));
  const auto as_floats = [](const std::vector<std::size_t>& values) {
    NdArray<float> array({values.size()});
    for (std::size_t i = 0; i < values.size(); ++i) array(i) = static_cast<float>(values[i]);
    return array;
  };
  const NdArray<float> own_array = as_floats(own);
  const NdArray<float> low_array = as_floats(low);
  const NdArray<float> high_array = as_floats(high);
  auto outputs = session.run({{Names::kSamples, &input},
                              {Names::kFrameIndex, &own_array},
                              {Names::kWindowLow, &low_array},
                              {Names::kWindowHigh, &high_array}},
                             {Names::kLogMel, "features"});
  return {std::move(outputs.at(0)), std::move(outputs.at(1))};
}

FbankConfig uncentred() {
  FbankConfig config;
  config.subtract_mean = false;
  return config;
}

TEST(FbankGraph, LogMelEqualsTheHostFbank) {
  const Fbank fbank(uncentred());
  // 384 frames: whole blocks of 128, the graph's unit for the window sums.
  const std::vector<float> samples = test_samples(383 * 160 + 400 + 97);
  const NdArray<float> host = fbank.compute(samples);
  const std::size_t frames = host.dim(0);
  std::vector<std::size_t> own(frames);
  for (std::size_t f = 0; f < frames; ++f) own[f] = f;
  const GraphOutputs graph = run_front_end(fbank, samples, own, std::vector<std::size_t>(frames, 0),
                                           std::vector<std::size_t>(frames, frames));
  ASSERT_EQ(graph.log_mel.shape(), (std::vector<std::size_t>{1, frames, 80}));
  double worst = 0.0;
  double floor_rows = 0;
  for (std::size_t f = 0; f < frames; ++f) {
    for (std::size_t m = 0; m < 80; ++m) {
      worst = std::max(worst, static_cast<double>(std::abs(graph.log_mel(0, f, m) - host(f, m))));
    }
    if (host(f, 0) < -15.0f) ++floor_rows;
  }
  ::testing::Test::RecordProperty("max_abs_log_mel", std::to_string(worst));
  EXPECT_LT(worst, 1e-3);
  EXPECT_GT(floor_rows, 0) << "the silence must reach the log floor";
}

// Each row centred with its own window's mean: equal to the host's log mel minus the float64
// mean over [low, high), for windows of any width and position, rows in any order.
TEST(FbankGraph, FeaturesAreCentredWithEachRowsWindowMean) {
  const Fbank fbank(uncentred());
  const std::vector<float> samples = test_samples(511 * 160 + 400);  // 512 frames
  const NdArray<float> host = fbank.compute(samples);
  const std::size_t frames = host.dim(0);
  std::vector<std::size_t> own;
  std::vector<std::size_t> low;
  std::vector<std::size_t> high;
  for (std::size_t i = 0; i < 150; ++i) {
    const std::size_t frame = (i * 37) % frames;
    const std::size_t width = 1 + (i * 53) % 300;
    const std::size_t first = std::min(frame, frames - width);
    own.push_back(frame);
    low.push_back(first);
    high.push_back(first + width);
  }
  const GraphOutputs graph = run_front_end(fbank, samples, own, low, high);
  ASSERT_EQ(graph.features.shape(), (std::vector<std::size_t>{1, own.size(), 80}));
  double worst = 0.0;
  for (std::size_t i = 0; i < own.size(); ++i) {
    for (std::size_t m = 0; m < 80; ++m) {
      double mean = 0.0;
      for (std::size_t f = low[i]; f < high[i]; ++f) mean += host(f, m);
      mean /= static_cast<double>(high[i] - low[i]);
      const double expected = static_cast<double>(host(own[i], m)) - mean;
      worst = std::max(worst, std::abs(static_cast<double>(graph.features(0, i, m)) - expected));
    }
  }
  ::testing::Test::RecordProperty("max_abs_features", std::to_string(worst));
  EXPECT_LT(worst, 1e-3);
}

TEST(FbankGraph, SamplesMustCoverWholeBlocksOfFrames) {
  const Fbank fbank(uncentred());
  const std::vector<float> samples = test_samples(300 * 160 + 400);  // 301 frames
  EXPECT_THROW(run_front_end(fbank, samples, {0}, {0}, {1}), Error);
}

TEST(FbankGraph, PrependRefusesAModelWithoutTheFeaturesOrWithATakenName) {
  const Fbank fbank(uncentred());
  const auto split = graph::split_before_statistics_pooling(
      graph::testing::make_test_embedding_model(), "test model");
  const std::string pooled = graph::build_pooled_trunk_model(split, "test model", 1e-7);
  EXPECT_THROW(graph::prepend_fbank(pooled, "no such input", fbank.graph_spec(), "test model"),
               Error);
  const std::string twice = graph::prepend_fbank(pooled, graph::PooledTrunkGraphNames::kFeatures,
                                                 fbank.graph_spec(), "test model");
  EXPECT_THROW(graph::prepend_fbank(twice, graph::PooledTrunkGraphNames::kPairWeights,
                                    fbank.graph_spec(), "test model"),
               Error);
  // The front end's inputs come first, then the pooled trunk's own but the features.
  const auto model = graph::parse_model(twice, "test model");
  std::vector<std::string> inputs;
  for (const auto& input : model.graph().input()) inputs.push_back(input.name());
  EXPECT_EQ(inputs, (std::vector<std::string>{
                        Names::kSamples, Names::kFrameIndex, Names::kWindowLow, Names::kWindowHigh,
                        graph::PooledTrunkGraphNames::kPairWeights,
                        graph::PooledTrunkGraphNames::kInvWeightSums,
                        graph::PooledTrunkGraphNames::kInvVarianceDenominators,
                        graph::PooledTrunkGraphNames::kValidFrames}));
}

// The configuration field's names (`--embedding-features`) round-trip; others fail naming them.
TEST(FbankGraph, FeaturesSettingNamesRoundTrip) {
  for (const auto features :
       {SharedTrunkFeatures::kAuto, SharedTrunkFeatures::kHost, SharedTrunkFeatures::kGraph}) {
    EXPECT_EQ(parse_shared_trunk_features(shared_trunk_features_name(features)), features);
  }
  try {
    parse_shared_trunk_features("gpu");
    FAIL() << "an unknown name must fail";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("auto"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace parley::stages
