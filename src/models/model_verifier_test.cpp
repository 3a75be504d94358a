#include "models/model_verifier.h"

#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/sha256.h"
#include "models/model_files_test_support.h"
#include "testing/shared_data.h"
#include "testing/temporary_directory.h"

namespace parley::models {
namespace {

using parley::testing::TemporaryDirectory;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr const char* kFp16Sha256 =
    "b0acba8e4cc30e8ec2bd33075ce95f282d66acab86fb155860d8deddbfacd30c";

TEST(ModelVerifier, SharedFp16SegmentationPasses) {
  PARLEY_REQUIRE_SHARED(model, "models/segmentation-3.0-fp16.onnx");
  const ModelEntry& entry = Registry::builtin().get("segmentation-3.0-fp16");
  const Verification result = verify_model_file(entry, model);
  EXPECT_TRUE(result.passed()) << ::testing::PrintToString(result.problems);
  EXPECT_EQ(result.actual_sha256, kFp16Sha256);
  EXPECT_TRUE(result.notes.empty());
}

TEST(ModelVerifier, SharedVadAndPldaFilesPass) {
  PARLEY_REQUIRE_SHARED(models, "models");
  const Registry& registry = Registry::builtin();
  for (const char* id : {"silero-vad-6", "community-1-plda", "community-1-xvec-transform"}) {
    const ModelEntry& entry = registry.get(id);
    const auto path = models / entry.file;
    if (!std::filesystem::exists(path)) continue;
    const Verification result = verify_model_file(entry, path);
    EXPECT_TRUE(result.passed()) << id << ": " << ::testing::PrintToString(result.problems);
  }
}

TEST(ModelVerifier, CorruptedCopyNamesExpectedAndActualSha256) {
  PARLEY_REQUIRE_SHARED(model, "models/segmentation-3.0-fp16.onnx");
  TemporaryDirectory dir("corrupt");
  const auto copy = dir / "segmentation-3.0-fp16.onnx";
  std::filesystem::copy_file(model, copy);
  {
    // One flipped byte deep inside the weights: still a loadable model, a different file.
    std::fstream stream(copy, std::ios::in | std::ios::out | std::ios::binary);
    stream.seekg(2'000'000);
    char byte = 0;
    stream.read(&byte, 1);
    byte = static_cast<char>(byte ^ 0x55);
    stream.seekp(2'000'000);
    stream.write(&byte, 1);
  }
  const std::string actual = sha256_file(copy);
  ASSERT_NE(actual, kFp16Sha256);
  const Verification result =
      verify_model_file(Registry::builtin().get("segmentation-3.0-fp16"), copy);
  EXPECT_FALSE(result.passed());
  EXPECT_THAT(result.problems,
              ElementsAre(AllOf(HasSubstr(std::string("sha256 mismatch: expected ") + kFp16Sha256 +
                                          ", actual " + actual),
                                HasSubstr("parley models fetch --id segmentation-3.0-fp16"))));
}

TEST(ModelVerifier, TruncatedCopyReportsSizeAndLoadFailure) {
  PARLEY_REQUIRE_SHARED(model, "models/segmentation-3.0-fp16.onnx");
  TemporaryDirectory dir("truncated");
  const auto copy = dir / "segmentation-3.0-fp16.onnx";
  std::filesystem::copy_file(model, copy);
  std::filesystem::resize_file(copy, 1000);
  const Verification result =
      verify_model_file(Registry::builtin().get("segmentation-3.0-fp16"), copy);
  EXPECT_THAT(result.problems,
              Contains(HasSubstr("size: expected 2977738 bytes, the file has 1000")));
  EXPECT_THAT(result.problems, Contains(HasSubstr("sha256 mismatch")));
  EXPECT_THAT(result.problems, Contains(HasSubstr("ONNX Runtime cannot load this model")));
}

TEST(ModelVerifier, SignatureMismatchesAreSpelledOut) {
  PARLEY_REQUIRE_SHARED(model, "models/segmentation-3.0-fp16.onnx");
  ModelEntry entry = Registry::builtin().get("segmentation-3.0-fp16");
  entry.inputs[0].name = "audio";
  entry.inputs[0].element_type = "float16";
  entry.outputs[0].shape[2].fixed = 6;
  entry.outputs.push_back(TensorSpec{"extra", "float32", {}});
  const auto problems = compare_signature(entry, graph::inspect_onnx_model(model));
  EXPECT_THAT(
      problems,
      ElementsAre("input 0: expected name 'audio', the model has 'waveform'",
                  "input 'waveform': expected element type float16, the model has float32",
                  "expected 2 outputs (segmentation, extra), the model has 1 (segmentation)",
                  "output 'segmentation' axis 2: expected size 6 [1,frames,6], the model "
                  "has 7 [1,frames,7]"));

  ModelEntry rank = Registry::builtin().get("segmentation-3.0-fp16");
  rank.inputs[0].shape.pop_back();
  EXPECT_THAT(compare_signature(rank, graph::inspect_onnx_model(model)),
              ElementsAre("input 'waveform': expected rank 2 [1,1], the model has rank 3 "
                          "[1,1,samples]"));
}

TEST(ModelVerifier, DynamicModelAxesMatchAnyDeclaredSize) {
  PARLEY_REQUIRE_SHARED(model, "models/segmentation-3.0-fp16.onnx");
  ModelEntry entry = Registry::builtin().get("segmentation-3.0-fp16");
  entry.inputs[0].shape[2].fixed = 160000;  // the model's 'samples' axis is dynamic
  EXPECT_TRUE(compare_signature(entry, graph::inspect_onnx_model(model)).empty());
}

TEST(ModelVerifier, UnknownChecksumIsSkippedNotFailed) {
  PARLEY_REQUIRE_SHARED(model, "models/segmentation-3.0-fp16.onnx");
  ModelEntry entry = Registry::builtin().get("segmentation-3.0-fp16");
  entry.sha256.reset();
  const Verification result = verify_model_file(entry, model);
  EXPECT_TRUE(result.passed());
  EXPECT_THAT(result.notes, ElementsAre(HasSubstr("unknown checksum, skipped")));
}

TEST(ModelVerifier, NpzMissingArrayIsNamed) {
  PARLEY_REQUIRE_SHARED(plda, "models/plda/plda.npz");
  ModelEntry entry = Registry::builtin().get("community-1-plda");
  entry.arrays.push_back("eigenvalues");
  const Verification result = verify_model_file(entry, plda);
  EXPECT_THAT(result.problems,
              ElementsAre("array 'eigenvalues' is missing (the archive has: mu, psi, tr)"));
}

TEST(ModelVerifier, MissingFileSaysHowToGetIt) {
  const ModelEntry& entry = Registry::builtin().get("wespeaker-resnet34-lm");
  const Verification result = verify_model_file(entry, "/nonexistent/voxceleb_resnet34_LM.onnx");
  EXPECT_THAT(result.problems,
              ElementsAre(AllOf(HasSubstr("does not exist"),
                                HasSubstr("parley models fetch --id wespeaker-resnet34-lm"))));
}

TEST(ModelVerifier, NonOnnxFileIsReportedNotThrown) {
  TemporaryDirectory dir("garbage");
  testing::write_text(dir / "voxceleb_resnet34_LM.onnx", "this is not a model");
  const Verification result = verify_model_file(Registry::builtin().get("wespeaker-resnet34-lm"),
                                                dir / "voxceleb_resnet34_LM.onnx");
  EXPECT_THAT(result.problems, Contains(HasSubstr("ONNX Runtime cannot load this model")));
}

}  // namespace
}  // namespace parley::models
