#include "stages/shared_first_convolution.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "graph/first_convolution_split.h"
#include "graph/onnx_graph.h"
#include "stages/segmentation.h"
#include "stages/segmentation_test_support.h"
#include "testing/shared_data.h"

namespace parley::stages {
namespace {

using testing::ChunkFeed;

constexpr const char* kFp16Model = "models/segmentation-3.0-fp16.onnx";
// 39.97 s, three speakers: 30 whole windows and a zero-padded 31st.
constexpr const char* kClip = "goldens/pyannote-community1/04_three_speaker/clip_16k.wav";

bool bitwise_equal(const NdArray<float>& a, const NdArray<float>& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Every chunk of `audio`, with its origin in it unless `locate` is false, through `model`.
NdArray<float> segment_recording(SegmentationModel& model, const std::vector<float>& audio,
                                 bool locate = true) {
  ChunkFeed feed(audio, {}, locate);
  return testing::segment(model, feed);
}

TEST(FirstConvolutionSplit, FindsSincNetInTheFloat32Models) {
  PARLEY_REQUIRE_SHARED(model_path, kFp16Model);
  PARLEY_REQUIRE_FOLDED_FLOAT32_MODEL(folded, model_path);
  const auto split = graph::split_first_convolution(graph::read_model_bytes(folded), "folded");
  ASSERT_TRUE(split.has_value());
  EXPECT_EQ(split->filters, 80);
  EXPECT_EQ(split->kernel, 251);
  EXPECT_EQ(split->stride, 10);
  EXPECT_GT(split->norm_epsilon, 0.0f);
  // Filters computed in the graph (Sin, Cos), as in the official export: the convolution model
  // keeps their computation, and the session finds 80 of them.
  const auto computed =
      graph::split_first_convolution(graph::read_model_bytes(folded_upcast), "upcast");
  ASSERT_TRUE(computed.has_value());
  EXPECT_EQ(computed->filters, 0);  // not known before it runs
  const SharedFirstConvolution convolution(*computed, runtime::SessionConfig{}, 4, "upcast");
  EXPECT_EQ(convolution.filters(), 80);
  // Float16 graphs normalise in float16: not split, they run whole.
  EXPECT_FALSE(
      graph::split_first_convolution(graph::read_model_bytes(model_path), "fp16").has_value());
}

// The shared convolution against each chunk run whole: the same up to rounding, and the same
// speakers in (nearly) every frame.
TEST(SharedFirstConvolution, AgreesWithChunksRunWhole) {
  PARLEY_REQUIRE_SHARED(model_path, kFp16Model);
  PARLEY_REQUIRE_SHARED(clip, kClip);
  PARLEY_REQUIRE_FOLDED_FLOAT32_MODEL(folded, model_path);
  const auto audio = parley::audio::load_mono_16k(clip);
  SegmentationConfig whole_config;
  whole_config.share_first_convolution = false;
  SegmentationModel whole(folded, whole_config);
  ASSERT_FALSE(whole.shares_first_convolution());
  SegmentationModel shared(folded, SegmentationConfig{});
  ASSERT_TRUE(shared.shares_first_convolution());

  const NdArray<float> expected = segment_recording(whole, audio);
  const NdArray<float> actual = segment_recording(shared, audio);
  ASSERT_EQ(actual.shape(), expected.shape());
  float largest = 0.0f;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    if (std::isfinite(expected(i))) largest = std::max(largest, std::fabs(actual(i) - expected(i)));
  }
  EXPECT_LT(largest, 2e-3f);
  EXPECT_FALSE(bitwise_equal(actual, expected)) << "the shared path did not run";
  const auto agreement = testing::permutation_agreement(testing::decode_powerset(actual),
                                                        testing::decode_powerset(expected));
  EXPECT_GE(agreement.fraction(), 0.999);
  std::printf("shared vs whole: max |difference| %.3g, frames equal %.5f\n", largest,
              agreement.fraction());

  // Without a locator each chunk is its own recording: the same maths, other roundings.
  const NdArray<float> own = segment_recording(shared, audio, false);
  float own_largest = 0.0f;
  for (std::size_t i = 0; i < own.size(); ++i) {
    if (std::isfinite(expected(i)))
      own_largest = std::max(own_largest, std::fabs(own(i) - expected(i)));
  }
  EXPECT_LT(own_largest, 2e-3f);
}

// A frame's value depends on the recording and its block only: not on threads, on which chunk
// asked first, nor on blocks evicted and computed again.
TEST(SharedFirstConvolution, SameOutputForAnyThreadsAndCacheSize) {
  PARLEY_REQUIRE_SHARED(model_path, kFp16Model);
  PARLEY_REQUIRE_SHARED(clip, kClip);
  PARLEY_REQUIRE_FOLDED_FLOAT32_MODEL(folded, model_path);
  const auto audio = parley::audio::load_mono_16k(clip);
  SegmentationModel one_thread(folded, SegmentationConfig{});
  SegmentationConfig three;
  three.threads = 3;
  SegmentationModel three_threads(folded, three);
  const NdArray<float> first = segment_recording(one_thread, audio);
  EXPECT_TRUE(bitwise_equal(first, segment_recording(three_threads, audio)));
  EXPECT_TRUE(bitwise_equal(first, segment_recording(one_thread, audio)));  // a second run

  const auto split = graph::split_first_convolution(graph::read_model_bytes(folded), "folded");
  ASSERT_TRUE(split.has_value());
  SharedFirstConvolution roomy(*split, runtime::SessionConfig{}, 64, "folded");
  SharedFirstConvolution cramped(*split, runtime::SessionConfig{}, 1, "folded");
  const frames::ChunkPlan plan = testing::chunk_plan(audio);
  const std::int64_t frames = roomy.frames_per_chunk(160000);
  ASSERT_EQ(frames, 15975);
  std::vector<float> samples(160000);
  std::vector<float> from_roomy(static_cast<std::size_t>(80 * frames));
  std::vector<float> from_cramped(from_roomy.size());
  // Backwards, so that the cramped cache recomputes every block.
  for (std::int64_t chunk = plan.num_chunks() - 1; chunk >= 0; --chunk) {
    frames::copy_chunk(audio, plan, chunk, samples);
    roomy.chunk_input(0, audio, plan.chunk_offset(chunk), samples, from_roomy);
    cramped.chunk_input(0, audio, plan.chunk_offset(chunk), samples, from_cramped);
    ASSERT_EQ(from_roomy, from_cramped) << "chunk " << chunk;
  }
  // Chunks start in the first 30 s and reach 10 s further: 40 one-second blocks, each once.
  EXPECT_EQ(roomy.blocks_computed(), 40u);
  EXPECT_GT(cramped.blocks_computed(), roomy.blocks_computed());
}

TEST(SharedFirstConvolution, RejectsStartsBetweenStrides) {
  PARLEY_REQUIRE_SHARED(model_path, kFp16Model);
  PARLEY_REQUIRE_FOLDED_FLOAT32_MODEL(folded, model_path);
  const auto split = graph::split_first_convolution(graph::read_model_bytes(folded), "folded");
  ASSERT_TRUE(split.has_value());
  SharedFirstConvolution convolution(*split, runtime::SessionConfig{}, 4, "folded");
  const std::vector<float> audio(40000, 0.25f);
  std::vector<float> samples(16000, 0.25f);
  std::vector<float> out(static_cast<std::size_t>(80 * convolution.frames_per_chunk(16000)));
  EXPECT_THROW(convolution.chunk_input(0, audio, 5, samples, out), Error);
}

}  // namespace
}  // namespace parley::stages
