#include "models/speed_twin.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <onnxruntime_cxx_api.h>

#include "core/error.h"
#include "core/sha256.h"
#include "graph/onnx_graph.h"
#include "models/model_files_test_support.h"
#include "models/model_verifier.h"
#include "models/registry.h"
#include "testing/shared_data.h"
#include "testing/temporary_directory.h"

namespace parley::models {
namespace {

using parley::testing::TemporaryDirectory;
using ::testing::HasSubstr;

constexpr const char* kPython = "/usr/bin/python3";

// Runs tools/make_speed_twin.py; returns "" on success, else why it could not run.
std::string generate_twin(const std::filesystem::path& output) {
  const auto script = std::filesystem::path(PARLEY_SOURCE_DIR) / "tools" / "make_speed_twin.py";
  const std::string command =
      fmt::format("{} '{}' --output '{}' > /dev/null", kPython, script.string(), output.string());
  const int status = std::system(command.c_str());
  return status == 0 ? "" : fmt::format("`{}` exited with status {}", command, status);
}

// The generated twin, shared by the tests of this suite (generating it takes a second or two).
class SpeedTwin : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!std::filesystem::exists(kPython)) return;
    directory_ = std::make_unique<TemporaryDirectory>("twin");
    twin_path_ = *directory_ / "resnet34-speed-twin.onnx";
    generation_error_ = generate_twin(twin_path_);
  }
  static void TearDownTestSuite() { directory_.reset(); }

  void SetUp() override {
    if (!std::filesystem::exists(kPython)) {
      GTEST_SKIP() << kPython << " is missing; install python3, python3-numpy and python3-onnx "
                   << "(scripts/install-deps)";
    }
    ASSERT_EQ(generation_error_, "") << "the generator needs python3-numpy and python3-onnx";
  }

  static inline std::unique_ptr<TemporaryDirectory> directory_;
  static inline std::filesystem::path twin_path_;
  static inline std::string generation_error_;
};

// Deterministic fbank-like values: a fixed linear congruential sequence mapped to [-4, 4).
std::vector<float> synthetic_features(std::size_t count, std::uint32_t seed) {
  std::vector<float> values(count);
  std::uint32_t state = seed;
  for (auto& value : values) {
    state = state * 1664525u + 1013904223u;
    value = static_cast<float>(state >> 8) / static_cast<float>(1u << 24) * 8.0f - 4.0f;
  }
  return values;
}

std::vector<float> run_twin(const std::filesystem::path& model, std::int64_t batch,
                            std::int64_t frames, std::uint32_t seed,
                            std::vector<std::int64_t>& output_shape) {
  static Ort::Env environment(ORT_LOGGING_LEVEL_ERROR, "speed-twin-test");
  Ort::SessionOptions options;
  options.SetIntraOpNumThreads(2);
  Ort::Session session(environment, model.c_str(), options);
  std::vector<float> features =
      synthetic_features(static_cast<std::size_t>(batch * frames * 80), seed);
  const std::array<std::int64_t, 3> shape{batch, frames, 80};
  auto memory = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
  Ort::Value input = Ort::Value::CreateTensor<float>(memory, features.data(), features.size(),
                                                     shape.data(), shape.size());
  const char* input_names[] = {"feats"};
  const char* output_names[] = {"embs"};
  auto outputs = session.Run(Ort::RunOptions{nullptr}, input_names, &input, 1, output_names, 1);
  auto info = outputs[0].GetTensorTypeAndShapeInfo();
  output_shape = info.GetShape();
  const float* data = outputs[0].GetTensorData<float>();
  return {data, data + info.GetElementCount()};
}

double distance(const float* a, const float* b, std::size_t count) {
  double sum = 0;
  for (std::size_t index = 0; index < count; ++index) {
    sum += (a[index] - b[index]) * static_cast<double>(a[index] - b[index]);
  }
  return std::sqrt(sum);
}

double norm(const float* a, std::size_t count) {
  double sum = 0;
  for (std::size_t index = 0; index < count; ++index)
    sum += a[index] * static_cast<double>(a[index]);
  return std::sqrt(sum);
}

TEST_F(SpeedTwin, GeneratorIsDeterministicAndMatchesTheRegistry) {
  TemporaryDirectory second_dir("twin-again");
  const auto second = second_dir / "resnet34-speed-twin.onnx";
  ASSERT_EQ(generate_twin(second), "");
  const std::string first_sha = sha256_file(twin_path_);
  EXPECT_EQ(sha256_file(second), first_sha);

  const ModelEntry& entry = Registry::builtin().get("resnet34-speed-twin");
  EXPECT_EQ(entry.sha256, first_sha)
      << "tools/make_speed_twin.py no longer writes the file models/manifest.json records "
         "(changed generator, or numpy/onnx other than Debian bookworm's); if the change is "
         "intended, record the new sha256 and size";
  EXPECT_EQ(entry.size, std::filesystem::file_size(twin_path_));
}

TEST_F(SpeedTwin, VerifiesAgainstItsRegistryEntry) {
  const Verification result =
      verify_model_file(Registry::builtin().get("resnet34-speed-twin"), twin_path_);
  EXPECT_TRUE(result.passed()) << ::testing::PrintToString(result.problems);
  EXPECT_THAT(result.notes, ::testing::Contains(HasSubstr("speed twin: random weights")));
  // Same signature as the real WeSpeaker model, so the two are interchangeable.
  const auto against_real = compare_signature(Registry::builtin().get("wespeaker-resnet34-lm"),
                                              graph::inspect_onnx_model(twin_path_));
  EXPECT_TRUE(against_real.empty()) << ::testing::PrintToString(against_real);
}

TEST_F(SpeedTwin, MetadataMarksItAsATwin) {
  EXPECT_TRUE(is_speed_twin(twin_path_));
  const graph::OnnxModelInfo info = graph::inspect_onnx_model(twin_path_);
  EXPECT_EQ(info.description, "ResNet34 speed twin: random weights, no speaker knowledge");
  EXPECT_EQ(info.metadata.at("parley.pooling_input"), "/model/layer4/layer4.2/Relu_1_output_0");
}

TEST_F(SpeedTwin, MetadataIsReadWithoutASession) {
  EXPECT_EQ(graph::model_metadata(twin_path_), graph::inspect_onnx_model(twin_path_).metadata);
  // A file cut short is refused, not read as a model without metadata.
  const std::string bytes = graph::read_model_bytes(twin_path_);
  const auto cut = twin_path_.parent_path() / "cut-twin.onnx";
  std::ofstream(cut, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(1000));
  EXPECT_THROW(graph::model_metadata(cut), Error);
  std::filesystem::remove(cut);
}

TEST_F(SpeedTwin, SplitsBeforePoolingAtTheNamedTensor) {
  const graph::StatisticsPoolingSplit split = graph::split_before_statistics_pooling(
      graph::read_model_bytes(twin_path_), twin_path_.string());
  EXPECT_EQ(split.pooling_input, "/model/layer4/layer4.2/Relu_1_output_0");
  EXPECT_EQ(split.features_input, "feats");
  EXPECT_EQ(split.embedding_output, "embs");
  EXPECT_EQ(split.time_axis, -1);
  EXPECT_EQ(split.head.input_dim(), 5120u);
  EXPECT_EQ(split.head.output_dim(), 256u);
}

TEST_F(SpeedTwin, EmbeddingsHaveTheRightShapeAreFiniteAndDiffer) {
  std::vector<std::int64_t> shape;
  const auto single = run_twin(twin_path_, 1, 300, 1, shape);
  EXPECT_EQ(shape, (std::vector<std::int64_t>{1, 256}));
  const auto batch = run_twin(twin_path_, 2, 1000, 2, shape);
  ASSERT_EQ(shape, (std::vector<std::int64_t>{2, 256}));
  for (float value : single) ASSERT_TRUE(std::isfinite(value));
  for (float value : batch) ASSERT_TRUE(std::isfinite(value));

  const double single_norm = norm(single.data(), 256);
  EXPECT_GT(single_norm, 1e-2);
  EXPECT_LT(single_norm, 1e4);
  // Two different inputs give measurably different embeddings.
  EXPECT_GT(distance(batch.data(), batch.data() + 256, 256), 1e-3 * norm(batch.data(), 256));
  EXPECT_GT(distance(single.data(), batch.data(), 256), 1e-3 * single_norm);
}

TEST_F(SpeedTwin, WarningIsPrintedForTheTwinOnly) {
  EXPECT_EQ(speed_twin_warning("/m/resnet34-speed-twin.onnx"),
            "WARNING: /m/resnet34-speed-twin.onnx is a speed twin with random weights: speaker "
            "labels are meaningless. Download the real model with `parley models fetch`.");
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> stream(std::tmpfile(), &std::fclose);
  ASSERT_TRUE(stream);
  EXPECT_TRUE(warn_if_speed_twin(twin_path_, stream.get()));
  std::rewind(stream.get());
  std::string printed(4096, '\0');
  printed.resize(std::fread(printed.data(), 1, printed.size(), stream.get()));
  EXPECT_THAT(printed, HasSubstr(speed_twin_warning(twin_path_)));
}

TEST(SpeedTwinDetection, RealModelsAreNotTwins) {
  PARLEY_REQUIRE_SHARED(model, "models/segmentation-3.0-fp16.onnx");
  EXPECT_FALSE(is_speed_twin(model));
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> stream(std::tmpfile(), &std::fclose);
  EXPECT_FALSE(warn_if_speed_twin(model, stream.get()));
  EXPECT_EQ(std::ftell(stream.get()), 0);
}

}  // namespace
}  // namespace parley::models
