// The segmentation model as accelerators get it (graph/accelerator_rewrite.h), checked on the
// CPU with real audio: the rewrite must not change what the model computes.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>

#include "core/sha256.h"
#include "frames/output.h"
#include "graph/accelerator_rewrite.h"
#include "graph/constant_if_inlining.h"
#include "graph/float16_graph.h"
#include "graph/onnx_graph.h"
#include "runtime/onnx_session.h"
#include "stages/segmentation_test_support.h"
#include "testing/shared_data.h"

namespace parley::stages {
namespace {

constexpr const char* kRecording = "eval/pyannote-sample/sample.wav";

// `count` consecutive 10 s chunks of the recording (1 s step), as [count, 1, 160000].
NdArray<float> real_chunks(const std::filesystem::path& wav, std::size_t count) {
  const auto audio = parley::audio::load_mono_16k(wav);
  testing::ChunkFeed feed(audio);
  NdArray<float> chunks({count, 1, 160000});
  for (std::size_t i = 0; i < count; ++i) {
    feed.read_chunk(i, std::span<float>(chunks.data() + i * 160000, 160000));
  }
  return chunks;
}

NdArray<float> run_model(const std::string& bytes, const NdArray<float>& waveforms) {
  runtime::OnnxSession session(runtime::ModelBuffer{bytes, "segmentation"},
                               runtime::SessionConfig{});
  return session.run({{session.inputs()[0].name, &waveforms}}, {session.outputs()[0].name}).front();
}

NdArray<float> chunk(const NdArray<float>& chunks, std::size_t index) {
  NdArray<float> one({1, 1, chunks.dim(2)});
  std::copy_n(chunks.data() + index * chunks.dim(2), chunks.dim(2), one.data());
  return one;
}

double max_difference(const NdArray<float>& a, const NdArray<float>& b) {
  double largest = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    largest = std::max(largest, static_cast<double>(std::abs(a(i) - b(i))));
  }
  return largest;
}

TEST(AcceleratorModel, Fp32FoldedRewriteIsBitIdenticalOnARealChunk) {
  PARLEY_REQUIRE_SHARED(model_path, "models/segmentation-3.0-fp16.onnx");
  PARLEY_REQUIRE_SHARED(wav, kRecording);
  PARLEY_REQUIRE_DERIVED_MODEL(upcast_model, "upcast_fp16_model.py", model_path,
                               "segmentation-3.0-fp32.onnx");
  PARLEY_REQUIRE_DERIVED_MODEL(folded_model, "fold_sincnet_filters.py", upcast_model,
                               "segmentation-3.0-fp32-folded.onnx");
  const std::string original = graph::read_model_bytes(folded_model);
  const auto rewrite = graph::rewrite_for_accelerator(original, folded_model.string());
  EXPECT_EQ(rewrite.ifs_inlined, 1);
  EXPECT_EQ(rewrite.states_removed, 8);
  EXPECT_TRUE(rewrite.batch_made_dynamic);
  EXPECT_TRUE(rewrite.batch_refusal.empty()) << rewrite.batch_refusal;

  const NdArray<float> waveform = real_chunks(wav, 1);
  const NdArray<float> expected = run_model(original, waveform);
  EXPECT_EQ(expected.values(), run_model(rewrite.model, waveform).values());
  // The If alone, too (what the CUDA bisection needed besides the states).
  const auto inlined = graph::inline_constant_ifs(original, folded_model.string());
  EXPECT_EQ(expected.values(), run_model(inlined.model, waveform).values());

  // Idempotent: a second pass finds nothing to do and returns the same bytes.
  const auto again = graph::rewrite_for_accelerator(rewrite.model, folded_model.string());
  EXPECT_FALSE(again.changed());
  EXPECT_TRUE(again.batch_dynamic);
  EXPECT_EQ(again.model, rewrite.model);
}

TEST(AcceleratorModel, DynamicBatchOfFourEqualsFourSingleChunks) {
  PARLEY_REQUIRE_SHARED(model_path, "models/segmentation-3.0-fp16.onnx");
  PARLEY_REQUIRE_SHARED(wav, kRecording);
  PARLEY_REQUIRE_DERIVED_MODEL(upcast_model, "upcast_fp16_model.py", model_path,
                               "segmentation-3.0-fp32.onnx");
  PARLEY_REQUIRE_DERIVED_MODEL(folded_model, "fold_sincnet_filters.py", upcast_model,
                               "segmentation-3.0-fp32-folded.onnx");
  const auto rewrite =
      graph::rewrite_for_accelerator(graph::read_model_bytes(folded_model), folded_model.string());
  ASSERT_TRUE(rewrite.batch_dynamic);
  // Chunks 0, 5, 10, 15: different speech in each.
  const NdArray<float> all = real_chunks(wav, 16);
  NdArray<float> batch({4, 1, 160000});
  for (std::size_t i = 0; i < 4; ++i) {
    std::copy_n(all.data() + 5 * i * 160000, 160000, batch.data() + i * 160000);
  }
  const NdArray<float> batched = run_model(rewrite.model, batch);
  ASSERT_EQ(batched.dim(0), 4u);
  const std::size_t per_chunk = batched.size() / 4;
  for (std::size_t i = 0; i < 4; ++i) {
    const NdArray<float> single = run_model(rewrite.model, chunk(all, 5 * i));
    ASSERT_EQ(single.size(), per_chunk);
    double largest = 0.0;
    for (std::size_t j = 0; j < per_chunk; ++j) {
      largest =
          std::max(largest, static_cast<double>(std::abs(single(j) - batched(i * per_chunk + j))));
    }
    EXPECT_LT(largest, 1e-4) << "chunk " << i;
  }
}

// ONNX Runtime's CPU provider has no float16 kernels for most of this graph: it inserts casts to
// float32 and drops redundant cast pairs within one graph, but rounds to float16 at the If's
// subgraph boundary. So on the CPU the float16 file gives slightly different log-probabilities
// once inlined (the same operations with one float16 rounding fewer), not bit-identical ones; the
// decoded speakers agree. On a provider with float16 kernels (CUDA) nothing is cast.
TEST(AcceleratorModel, Fp16RewriteDecodesToTheSameSpeakers) {
  PARLEY_REQUIRE_SHARED(model_path, "models/segmentation-3.0-fp16.onnx");
  PARLEY_REQUIRE_SHARED(wav, kRecording);
  const std::string original = graph::read_model_bytes(model_path);
  const auto rewrite = graph::rewrite_for_accelerator(original, model_path.string());
  EXPECT_EQ(rewrite.ifs_inlined, 1);
  EXPECT_EQ(rewrite.states_removed, 8);
  EXPECT_TRUE(rewrite.batch_made_dynamic);
  const auto again = graph::rewrite_for_accelerator(rewrite.model, model_path.string());
  EXPECT_EQ(again.model, rewrite.model);

  const NdArray<float> waveforms = real_chunks(wav, 16);
  NdArray<float> before({16, 589, 7});
  NdArray<float> after({16, 589, 7});
  runtime::OnnxSession original_session(runtime::ModelBuffer{original, "original"}, {});
  runtime::OnnxSession rewritten_session(runtime::ModelBuffer{rewrite.model, "rewritten"}, {});
  auto run_one = [](runtime::OnnxSession& session, const NdArray<float>& waveform) {
    return session.run({{session.inputs()[0].name, &waveform}}, {session.outputs()[0].name})
        .front();
  };
  for (std::size_t i = 0; i < 16; ++i) {
    const auto one = chunk(waveforms, i);
    const auto expected = run_one(original_session, one);
    const auto actual = run_one(rewritten_session, one);
    std::copy_n(expected.data(), expected.size(), before.data() + i * expected.size());
    std::copy_n(actual.data(), actual.size(), after.data() + i * actual.size());
  }
  const auto agreement = testing::permutation_agreement(testing::decode_powerset(after),
                                                        testing::decode_powerset(before));
  std::printf("fp16 rewritten vs original: max |log-prob diff| %.4f, decoded frames %.2f %%\n",
              max_difference(before, after), 100.0 * agreement.fraction());
  EXPECT_GE(agreement.fraction(), 0.98);
}

}  // namespace
}  // namespace parley::stages

namespace parley::stages {
namespace {

// What an accelerator's SegmentationModel does with the rewritten model, run on the CPU: calls
// padded to buckets (the tail of 7 chunks goes as 4 with one zero row), padding dropped.
TEST(AcceleratorModel, BucketPaddedCallsEqualOneChunkCalls) {
  PARLEY_REQUIRE_SHARED(model_path, "models/segmentation-3.0-fp16.onnx");
  PARLEY_REQUIRE_SHARED(wav, kRecording);
  PARLEY_REQUIRE_DERIVED_MODEL(upcast_model, "upcast_fp16_model.py", model_path,
                               "segmentation-3.0-fp32.onnx");
  PARLEY_REQUIRE_DERIVED_MODEL(folded_model, "fold_sincnet_filters.py", upcast_model,
                               "segmentation-3.0-fp32-folded.onnx");
  const auto rewrite =
      graph::rewrite_for_accelerator(graph::read_model_bytes(folded_model), folded_model.string());
  const auto rewritten_path =
      std::filesystem::path(PARLEY_TEST_OUTPUT_DIR) / "segmentation-3.0-fp32-accelerator.onnx";
  frames::write_text_file(rewritten_path, rewrite.model);

  SegmentationConfig batched_config;
  batched_config.batch_size = 4;
  batched_config.batch_buckets = runtime::Buckets({1, 2, 4});
  SegmentationModel batched(rewritten_path, batched_config);
  ASSERT_TRUE(batched.signature().batch_is_dynamic);
  const std::vector<runtime::BatchSlice> expected_plan = {{0, 4, 4}, {4, 3, 4}};
  EXPECT_EQ(batched.plan_calls(7), expected_plan);

  const auto audio = parley::audio::load_mono_16k(wav);
  const std::vector<std::size_t> first_seven = {0, 1, 2, 3, 4, 5, 6};
  const NdArray<float> padded = testing::segment(batched, audio, first_seven);
  SegmentationModel single(rewritten_path, SegmentationConfig{});
  const NdArray<float> one_by_one = testing::segment(single, audio, first_seven);
  ASSERT_EQ(padded.shape(), one_by_one.shape());
  EXPECT_LT(max_difference(padded, one_by_one), 1e-4);
}

}  // namespace
}  // namespace parley::stages

namespace parley::stages {
namespace {

// The segmentation stage, `parley warm-cache` and the placement must name the same bytes: the
// rewritten model is kept once under its digest; a model the rewrite leaves alone is not copied.
TEST(AcceleratorModel, RewrittenModelFileIsKeptOnceUnderItsDigest) {
  PARLEY_REQUIRE_SHARED(model_path, "models/segmentation-3.0-fp16.onnx");
  PARLEY_REQUIRE_SHARED(vad_path, "models/silero_vad.onnx");
  const auto directory = std::filesystem::path(PARLEY_TEST_OUTPUT_DIR) / "accelerator-models";
  std::filesystem::remove_all(directory);
  const auto first = graph::accelerator_model_file(model_path, directory);
  EXPECT_EQ(first.path.parent_path(), directory);
  EXPECT_EQ(first.sha256, sha256_file(first.path));
  EXPECT_NE(first.path.filename().string().find(first.sha256.substr(0, 16)), std::string::npos);
  const auto mtime = std::filesystem::last_write_time(first.path);
  const auto second = graph::accelerator_model_file(model_path, directory);
  EXPECT_EQ(second.path, first.path);
  EXPECT_EQ(std::filesystem::last_write_time(second.path), mtime);  // not written again

  const auto unchanged = graph::accelerator_model_file(vad_path, directory);
  EXPECT_FALSE(unchanged.rewrite.changed());
  EXPECT_EQ(unchanged.path, vad_path);
  EXPECT_EQ(unchanged.sha256, sha256_file(vad_path));
  std::filesystem::remove_all(directory);
}

// The segmentation model as an accelerator gets it converts whole, LSTMs and casts included.
// (What it computes is measured on a GPU: ONNX Runtime's CPU provider has no float16 LSTM.)
TEST(AcceleratorModel, FoldedSegmentationModelConvertsToFloat16) {
  PARLEY_REQUIRE_SHARED(model_path, "models/segmentation-3.0-fp16.onnx");
  PARLEY_REQUIRE_DERIVED_MODEL(path, "fold_sincnet_filters.py", model_path,
                               "segmentation-3.0-fp16-folded.onnx");
  const auto rewrite = graph::rewrite_for_accelerator(graph::read_model_bytes(path), path.string());
  const auto converted = graph::convert_to_float16(rewrite.model, path.string());
  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(converted.model));
  for (const auto& initializer : model.graph().initializer()) {
    EXPECT_NE(initializer.data_type(), onnx::TensorProto::FLOAT) << initializer.name();
  }
  for (const auto& node : model.graph().node()) {
    if (node.op_type() != "Cast" || node.output(0) == model.graph().output(0).name()) continue;
    EXPECT_NE(node.attribute(0).i(), onnx::TensorProto::FLOAT) << node.name();
  }
  EXPECT_EQ(model.graph().output(0).type().tensor_type().elem_type(), onnx::TensorProto::FLOAT);
}

}  // namespace
}  // namespace parley::stages
