#include "runtime/onnx_session.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/error.h"
#include "runtime/provider_attach.h"
#include "runtime/provider_discovery.h"
#include "testing/shared_data.h"
#include "testing/temporary_directory.h"

namespace parley::runtime {
namespace {

TEST(OnnxSession, MissingModelNamesTheFile) {
  try {
    OnnxSession session("/nonexistent/segmentation.onnx", SessionConfig{});
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("/nonexistent/segmentation.onnx"), std::string::npos);
  }
}

TEST(OnnxSession, RejectsGarbageModel) {
  const parley::testing::TemporaryDirectory temp("onnx-session-test");
  const auto path = temp / "garbage.onnx";
  { std::ofstream(path) << "this is not an onnx model"; }
  EXPECT_THROW(OnnxSession(path, SessionConfig{}), Error);
}

TEST(OnnxSession, GarbageBytesInMemoryNameTheModel) {
  const std::string bytes = "this is not an onnx model either";
  try {
    OnnxSession session(ModelBuffer{bytes, "edited embedding model"}, SessionConfig{});
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("edited embedding model"), std::string::npos);
  }
}

TEST(OnnxSession, LoadsAModelFromMemory) {
  PARLEY_REQUIRE_SHARED(model, "models/segmentation-3.0-fp16.onnx");
  std::ifstream stream(model, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(stream)),
                          std::istreambuf_iterator<char>());
  OnnxSession session(ModelBuffer{bytes, "segmentation in memory"}, SessionConfig{});
  EXPECT_EQ(session.model_path(), "segmentation in memory");
  ASSERT_EQ(session.inputs().size(), 1u);
  EXPECT_EQ(session.inputs()[0].name, "waveform");
}

TEST(OnnxSession, InvalidConfigIsRejected) {
  SessionConfig config;
  config.intra_op_threads = 0;
  EXPECT_THROW(config.validate(), Error);
}

TEST(OnnxSession, RunsSegmentationModel) {
  PARLEY_REQUIRE_SHARED(model, "models/segmentation-3.0-fp16.onnx");
  OnnxSession session(model, SessionConfig{});
  ASSERT_EQ(session.inputs().size(), 1u);
  EXPECT_EQ(session.inputs()[0].name, "waveform");
  ASSERT_EQ(session.outputs().size(), 1u);
  NdArray<float> waveform({1, 1, 160000});
  for (std::size_t i = 0; i < waveform.size(); ++i) {
    waveform(i) = 0.1f * std::sin(static_cast<float>(i) * 0.05f);
  }
  auto outputs = session.run({{"waveform", &waveform}}, {session.outputs()[0].name});
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].shape(), (std::vector<std::size_t>{1, 589, 7}));
  for (float value : outputs[0].values()) EXPECT_TRUE(std::isfinite(value));
}

// Handing the arena back after each run changes where activations live, not what they hold.
TEST(OnnxSession, ReleasingTheArenaAfterEachRunKeepsResults) {
  PARLEY_REQUIRE_SHARED(model, "models/segmentation-3.0-fp16.onnx");
  NdArray<float> waveform({1, 1, 160000});
  for (std::size_t i = 0; i < waveform.size(); ++i) {
    waveform(i) = 0.1f * std::sin(static_cast<float>(i) * 0.05f);
  }
  OnnxSession keeping(model, SessionConfig{});
  SessionConfig releasing_config;
  releasing_config.release_cpu_arena_after_run = true;
  EXPECT_NE(releasing_config.to_string().find("release_cpu_arena_after_run"), std::string::npos);
  OnnxSession releasing(model, releasing_config);
  const std::string output = keeping.outputs()[0].name;
  const auto kept = keeping.run({{"waveform", &waveform}}, {output}).at(0);
  for (int run = 0; run < 2; ++run) {
    const auto released = releasing.run({{"waveform", &waveform}}, {output}).at(0);
    ASSERT_EQ(released.shape(), kept.shape());
    EXPECT_TRUE(std::equal(kept.values().begin(), kept.values().end(), released.values().begin()))
        << "run " << run;
  }
}

// A captured graph is asked for in the configuration's words and refused, before any model is
// read, where the provider cannot replay one at any shape.
TEST(OnnxSession, GraphCaptureIsRefusedWhereTheProviderCannotReplayOne) {
  SessionConfig config;
  config.capture_graph = true;
  try {
    config.validate();
    FAIL() << "expected an error";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("capture_graph: the network runs on the cpu provider"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("cuda"), std::string::npos) << message;
  }
  EXPECT_THROW(OnnxSession("/nonexistent/model.onnx", config), Error);
  config.provider = ProviderId::kMigraphx;  // compiles one graph per shape: no capture option
  EXPECT_THROW(config.validate(), Error);
  config.provider = ProviderId::kCuda;
  EXPECT_NO_THROW(config.validate());
  EXPECT_NE(config.to_string().find("capture_graph"), std::string::npos);
}

// Runs through buffers bound once per input shape (the path of a captured graph's runs) give
// what plain runs give, for new contents in the same buffers and for a second shape.
TEST(OnnxSession, PersistentBuffersGiveWhatPlainRunsGive) {
  PARLEY_REQUIRE_SHARED(model, "models/segmentation-3.0-fp16.onnx");
  OnnxSession plain(model, SessionConfig{});
  SessionConfig bound_config;
  bound_config.persistent_buffers = true;
  OnnxSession bound(model, bound_config);
  const std::string output = plain.outputs()[0].name;
  const auto waveform = [](std::size_t samples, float frequency) {
    NdArray<float> wave({1, 1, samples});
    for (std::size_t i = 0; i < wave.size(); ++i) {
      wave(i) = 0.1f * std::sin(static_cast<float>(i) * frequency);
    }
    return wave;
  };
  const std::vector<NdArray<float>> inputs = {waveform(160000, 0.05f), waveform(160000, 0.011f),
                                              waveform(80000, 0.03f), waveform(160000, 0.05f)};
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const auto expected = plain.run({{"waveform", &inputs[i]}}, {output}).at(0);
    const auto got = bound.run({{"waveform", &inputs[i]}}, {output}).at(0);
    ASSERT_EQ(got.shape(), expected.shape()) << "input " << i;
    for (std::size_t j = 0; j < got.size(); ++j) {
      ASSERT_NEAR(got(j), expected(j), 1e-6f) << "input " << i << ", value " << j;
    }
  }
  EXPECT_EQ(bound.bound_shapes(), 2u);
  EXPECT_EQ(plain.bound_shapes(), 0u);
}

TEST(OnnxSession, UnavailableProviderIsAnErrorNamingIt) {
  PARLEY_REQUIRE_SHARED(model, "models/segmentation-3.0-fp16.onnx");
  SessionConfig config;
  config.provider = ProviderId::kMigraphx;
  if (find_status(provider_statuses(), config.provider).available) {
    GTEST_SKIP() << "this machine has MIGraphX";
  }
  try {
    OnnxSession session(model, config);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("execution provider migraphx: unavailable"),
              std::string::npos)
        << error.what();
  }
}

TEST(OnnxSession, CpuProviderAndSymbolsAreReported) {
  PARLEY_REQUIRE_SHARED(model, "models/segmentation-3.0-fp16.onnx");
  SessionConfig config;
  config.provider = ProviderId::kCpu;
  OnnxSession session(model, config);
  EXPECT_EQ(session.provider(), ProviderId::kCpu);
  EXPECT_EQ(session.provider_method(), "built in");
  ASSERT_EQ(session.inputs()[0].symbols.size(), session.inputs()[0].shape.size());
  EXPECT_NE(config.to_string().find("optimization=extended"), std::string::npos);
}

TEST(OnnxSession, TensorRtProfileFollowsStaticShapes) {
  const auto options =
      static_shape_options(ProviderId::kTensorRt, {{"waveform", {4, 1, 160000}}, {"m", {4, 2}}});
  EXPECT_EQ(options.at("trt_profile_min_shapes"), "waveform:4x1x160000,m:4x2");
  EXPECT_EQ(options.at("trt_profile_max_shapes"), "waveform:4x1x160000,m:4x2");
  EXPECT_TRUE(static_shape_options(ProviderId::kMigraphx, {{"w", {1}}}).empty());
}

}  // namespace
}  // namespace parley::runtime
