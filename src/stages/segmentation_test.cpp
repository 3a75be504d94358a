#include "stages/segmentation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include <fstream>
#include <functional>

#include "core/error.h"
#include "graph/graph_edit.h"
#include "graph/onnx_graph.h"
#include "stages/segmentation_test_support.h"
#include "testing/shared_data.h"
#include "testing/temporary_directory.h"

namespace parley::stages {
namespace {

using testing::segment;

constexpr const char* kFp16Model = "models/segmentation-3.0-fp16.onnx";
// 39.97 s: 30 complete windows and a zero-padded 31st (last 9.97 s of audio).
constexpr const char* kClip = "goldens/pyannote-community1/04_three_speaker/clip_16k.wav";
// Speech, overlap and the padded last chunk.
const std::vector<std::size_t> kChunkPositions = {0, 7, 12, 21, 29, 30};

float max_abs_difference(const NdArray<float>& a, const NdArray<float>& b) {
  EXPECT_EQ(a.shape(), b.shape());
  float largest = 0.f;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    largest = std::max(largest, std::fabs(a(i) - b(i)));
  }
  return largest;
}

bool bitwise_equal(const NdArray<float>& a, const NdArray<float>& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

NdArray<float> run_chunks(const std::filesystem::path& model_path, const std::vector<float>& audio,
                          int threads, std::size_t batch_size) {
  SegmentationConfig config;
  config.threads = threads;
  config.batch_size = batch_size;
  SegmentationModel model(model_path, config);
  return segment(model, audio, kChunkPositions);
}

// Scores [chunks, 3 frames, 7 classes] numbered from `first_value`.
NdArray<float> numbered_scores(std::size_t chunks, float first_value) {
  NdArray<float> scores({chunks, 3, 7});
  for (std::size_t i = 0; i < scores.size(); ++i) scores(i) = first_value + static_cast<float>(i);
  return scores;
}

TEST(ScoreKeepingFeed, JoinsCallsInChunkOrderAndRefusesAnythingElse) {
  struct Keeping : ScoreKeepingFeed {
    void read_chunk(std::size_t /*chunk*/, std::span<float> /*samples*/) override {}
  } feed;
  feed.take_scores(0, numbered_scores(2, 0.f));
  feed.take_scores(2, numbered_scores(1, 42.f));
  const NdArray<float> joined = feed.take_all();
  ASSERT_EQ(joined.shape(), (std::vector<std::size_t>{3, 3, 7}));
  for (std::size_t i = 0; i < joined.size(); ++i) EXPECT_EQ(joined(i), static_cast<float>(i));
  EXPECT_EQ(feed.take_all().size(), 0u) << "taken out, not kept";

  feed.take_scores(0, numbered_scores(1, 0.f));  // one call: handed back as it came
  EXPECT_EQ(feed.take_all().shape(), (std::vector<std::size_t>{1, 3, 7}));
  EXPECT_THROW(feed.take_scores(1, numbered_scores(1, 0.f)), Error) << "a gap before it";
  feed.take_scores(0, numbered_scores(1, 0.f));
  EXPECT_THROW(feed.take_scores(1, NdArray<float>({1, 4, 7})), Error) << "other frames";
  EXPECT_THROW(feed.take_scores(1, NdArray<float>({1, 3})), Error) << "not [chunks,frames,classes]";
}

TEST(SegmentationConfig, RejectsNonsense) {
  SegmentationConfig config;
  config.threads = 0;
  EXPECT_THROW(config.validate(), Error);
  config = SegmentationConfig{};
  config.batch_size = 0;
  EXPECT_THROW(config.validate(), Error);
}

TEST(SegmentationConfig, RejectsAZeroBatchMultiple) {
  SegmentationConfig config;
  config.accelerator_batch_multiple = 0;
  EXPECT_THROW(config.validate(), Error);
}

// A dynamic-shape accelerator pads a run's last call to a multiple: a few batch sizes, each of
// which costs a first run alone in the process, instead of one per possible tail.
TEST(PlanPaddedCalls, PadsTheLastCallToAMultipleWithinTheBatch) {
  using runtime::BatchSlice;
  EXPECT_EQ(plan_padded_calls(534, 256, 64),
            (std::vector<BatchSlice>{{0, 256, 256}, {256, 256, 256}, {512, 22, 64}}));
  EXPECT_EQ(plan_padded_calls(500, 256, 64),
            (std::vector<BatchSlice>{{0, 256, 256}, {256, 244, 256}}));
  EXPECT_EQ(plan_padded_calls(100, 96, 64), (std::vector<BatchSlice>{{0, 96, 96}, {96, 4, 64}}));
  EXPECT_EQ(plan_padded_calls(70, 96, 64), (std::vector<BatchSlice>{{0, 70, 96}}))
      << "never past the batch";
  EXPECT_EQ(plan_padded_calls(7, 4, 4), (std::vector<BatchSlice>{{0, 4, 4}, {4, 3, 4}}))
      << "the CPU's whole batches";
  EXPECT_EQ(plan_padded_calls(7, 4, 1), (std::vector<BatchSlice>{{0, 4, 4}, {4, 3, 3}}));
  EXPECT_TRUE(plan_padded_calls(0, 4, 4).empty());
  EXPECT_THROW(plan_padded_calls(7, 0, 1), Error);
  EXPECT_THROW(plan_padded_calls(7, 4, 0), Error);
}

// A run that is always one window (the live diarizer's step) asks for 2 rows: on a dynamic-shape
// GPU too, where it was padded to 64 rows of which 63 were zeros, every step of every stream.
TEST(PlanUnbucketedCalls, RowsCapEveryCallOnTheCpuAndOnADynamicShapeAccelerator) {
  using runtime::BatchSlice;
  using Padding = SegmentationCallPadding;
  EXPECT_EQ(plan_unbucketed_calls(1, 128, Padding::kMultiple, 64, 2),
            (std::vector<BatchSlice>{{0, 1, 2}}));
  EXPECT_EQ(plan_unbucketed_calls(1, 128, Padding::kMultiple, 64, 0),
            (std::vector<BatchSlice>{{0, 1, 64}}))
      << "without rows, a GPU's multiple";
  EXPECT_EQ(plan_unbucketed_calls(3, 128, Padding::kMultiple, 64, 2),
            (std::vector<BatchSlice>{{0, 2, 2}, {2, 1, 2}}));
  EXPECT_EQ(plan_unbucketed_calls(1, 4, Padding::kWholeBatch, 64, 2),
            (std::vector<BatchSlice>{{0, 1, 2}}));
  EXPECT_EQ(plan_unbucketed_calls(1, 4, Padding::kWholeBatch, 64, 0),
            (std::vector<BatchSlice>{{0, 1, 4}}))
      << "the CPU's whole batch";
  EXPECT_EQ(plan_unbucketed_calls(1, 1, Padding::kWholeBatch, 64, 2),
            (std::vector<BatchSlice>{{0, 1, 1}}))
      << "never past the batch";
  EXPECT_EQ(plan_unbucketed_calls(1, 128, Padding::kNone, 64, 2),
            (std::vector<BatchSlice>{{0, 1, 1}}))
      << "a static-shape provider compiles the calls it gets";
}

TEST(SegmentationModel, MissingModelNamesTheFile) {
  try {
    SegmentationModel model("/nonexistent/seg.onnx", SegmentationConfig{});
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("/nonexistent/seg.onnx"), std::string::npos);
  }
}

TEST(SegmentationModel, RejectsModelWithAnotherSignature) {
  PARLEY_REQUIRE_SHARED(vad, "models/silero_vad.onnx");
  try {
    SegmentationModel model(vad, SegmentationConfig{});
    FAIL() << "expected an error";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("silero_vad.onnx"), std::string::npos) << message;
    EXPECT_NE(message.find("segmentation-3.0"), std::string::npos) << message;
  }
}

TEST(SegmentationModel, Fp16ModelHasBatchFixedToOne) {
  PARLEY_REQUIRE_SHARED(model_path, kFp16Model);
  SegmentationConfig config;
  config.batch_size = 8;
  SegmentationModel model(model_path, config);
  EXPECT_EQ(model.signature().input_name, "waveform");
  EXPECT_EQ(model.signature().output_name, "segmentation");
  EXPECT_FALSE(model.signature().batch_is_dynamic);
  EXPECT_FALSE(model.signature().sincnet_folded);
  EXPECT_EQ(model.effective_batch_size(), 1u);
  EXPECT_NE(unfolded_fp16_warning(graph::read_model_bytes(model_path), model_path.string())
                .find("fold_sincnet_filters.py"),
            std::string::npos);
}

TEST(SegmentationModel, FoldedModelIsRecognised) {
  PARLEY_REQUIRE_SHARED(model_path, kFp16Model);
  PARLEY_REQUIRE_DERIVED_MODEL(folded_model, "fold_sincnet_filters.py", model_path,
                               "segmentation-3.0-fp16-folded.onnx");
  SegmentationModel model(folded_model, SegmentationConfig{});
  EXPECT_TRUE(model.signature().sincnet_folded);
  EXPECT_FALSE(model.signature().batch_is_dynamic);
  EXPECT_EQ(unfolded_fp16_warning(graph::read_model_bytes(folded_model), folded_model.string()),
            "");
}

TEST(SegmentationModel, Fp16ModelAcceptsAnyChunkLength) {
  PARLEY_REQUIRE_SHARED(model_path, kFp16Model);
  SegmentationModel model(model_path, SegmentationConfig{});
  EXPECT_EQ(model.signature().declared_samples, -1);
}

TEST(SegmentationModel, RejectsChunksOfWrongLength) {
  PARLEY_REQUIRE_SHARED(model_path, kFp16Model);
  SegmentationModel model(model_path, SegmentationConfig{});
  EXPECT_THROW(model.run(NdArray<float>({2, 1000})), Error);
}

TEST(SegmentationModel, NoChunksGiveEmptyOutput) {
  PARLEY_REQUIRE_SHARED(model_path, kFp16Model);
  SegmentationModel model(model_path, SegmentationConfig{});
  const auto output = model.run(NdArray<float>({0, 160000}));
  EXPECT_EQ(output.dim(0), 0u);
  EXPECT_EQ(output.size(), 0u);
}

// The segmentation model with its output passed through nodes that `damage` adds between the
// original output (renamed `raw`) and the graph's output name: a stand-in for a broken model.
std::filesystem::path damaged_model(
    const std::filesystem::path& source, const std::filesystem::path& target,
    const std::function<void(onnx::GraphProto&, const std::string&, const std::string&)>& damage) {
  onnx::ModelProto model = graph::parse_model(graph::read_model_bytes(source), source.string());
  onnx::GraphProto& graph = *model.mutable_graph();
  const std::string output = graph.output(0).name();
  for (auto& node : *graph.mutable_node()) {
    for (auto& name : *node.mutable_output()) {
      if (name == output) name = "raw";
    }
  }
  damage(graph, "raw", output);
  std::ofstream(target, std::ios::binary) << graph::serialize_model(model, target.string());
  return target;
}

void add_node(onnx::GraphProto& graph, const std::string& type,
              std::initializer_list<std::string> inputs, const std::string& output) {
  auto* node = graph.add_node();
  node->set_op_type(type);
  for (const auto& input : inputs) node->add_input(input);
  node->add_output(output);
}

std::string error_running(const std::filesystem::path& model_path) {
  try {
    SegmentationModel model(model_path, SegmentationConfig{});
    model.run(NdArray<float>({1, model.config().samples_per_chunk}, 0.1f));
  } catch (const Error& error) {
    return error.what();
  }
  return "no error";
}

// All-NaN scores decoded as silence (exit 0, no turns).
TEST(SegmentationModel, NanScoresFailNamingTheModel) {
  PARLEY_REQUIRE_SHARED(fp16, "models/segmentation-3.0-fp16.onnx");
  const parley::testing::TemporaryDirectory temp("segmentation-nan");
  const auto nan_model =
      damaged_model(fp16, temp / "nan.onnx",
                    [](onnx::GraphProto& graph, const std::string& raw, const std::string& out) {
                      add_node(graph, "Sub", {raw, raw}, "zero");
                      add_node(graph, "Div", {"zero", "zero"}, out);  // 0/0
                    });
  EXPECT_NE(error_running(nan_model).find(nan_model.string() + ": returned NaN or infinite"),
            std::string::npos)
      << error_running(nan_model);
}

// A model that returns 0 frames reached memcpy with a null pointer (UBSan).
TEST(SegmentationModel, NoFramesFailNamingTheModel) {
  PARLEY_REQUIRE_SHARED(fp16, "models/segmentation-3.0-fp16.onnx");
  const parley::testing::TemporaryDirectory temp("segmentation-empty");
  const auto empty_model = damaged_model(
      fp16, temp / "empty.onnx",
      [](onnx::GraphProto& graph, const std::string& raw, const std::string& out) {
        for (const auto& [name, value] :
             {std::pair{"zero_index", 0L}, std::pair{"frame_axis", 1L}}) {
          auto* tensor = graph.add_initializer();
          tensor->set_name(name);
          tensor->set_data_type(onnx::TensorProto::INT64);
          tensor->add_dims(1);
          tensor->add_int64_data(value);
        }
        add_node(graph, "Slice", {raw, "zero_index", "zero_index", "frame_axis"}, out);
      });
  EXPECT_NE(error_running(empty_model).find(empty_model.string() + ": returned 0 frames"),
            std::string::npos)
      << error_running(empty_model);
}

TEST(SegmentationModel, ReturnsPowersetLogProbabilities) {
  PARLEY_REQUIRE_SHARED(model_path, kFp16Model);
  PARLEY_REQUIRE_SHARED(clip, kClip);
  const auto audio = parley::audio::load_mono_16k(clip);
  SegmentationModel model(model_path, SegmentationConfig{});
  const auto output = segment(model, audio, {3, 30});
  ASSERT_EQ(output.shape(), (std::vector<std::size_t>{2, 589, 7}));
  for (std::size_t c = 0; c < 2; ++c) {
    for (std::size_t f = 0; f < 589; ++f) {
      double total = 0;
      for (std::size_t k = 0; k < 7; ++k) total += std::exp(double(output(c, f, k)));
      ASSERT_NEAR(total, 1.0, 1e-2) << "chunk " << c << " frame " << f;
    }
  }
}

TEST(SegmentationModel, FedChunkIsZeroPadded) {
  PARLEY_REQUIRE_SHARED(model_path, kFp16Model);
  PARLEY_REQUIRE_SHARED(clip, kClip);
  const auto audio = parley::audio::load_mono_16k(clip);
  SegmentationModel model(model_path, SegmentationConfig{});
  // Chunk 30 holds 9.97 s of audio; the source writes only those samples.
  const auto from_source = segment(model, audio, {30});
  NdArray<float> explicit_chunk({1, 160000});
  std::copy(audio.begin() + 30 * 16000, audio.end(), explicit_chunk.data());
  const auto from_array = model.run(explicit_chunk);
  EXPECT_TRUE(bitwise_equal(from_source, from_array));
}

TEST(SegmentationModel, ReusingSilentChunksChangesNoOutput) {
  PARLEY_REQUIRE_SHARED(model_path, kFp16Model);
  PARLEY_REQUIRE_SHARED(clip, kClip);
  // 25 s of digital silence, the three-speaker clip (40 s), 12 s of silence.
  const auto speech = parley::audio::load_mono_16k(clip);
  std::vector<float> audio(25 * 16000, 0.f);
  audio.insert(audio.end(), speech.begin(), speech.end());
  audio.resize(audio.size() + 12 * 16000, 0.f);
  // All-zero chunks (0, 3, 5, 15, 66, 67) between chunks with speech, some of it after silence.
  const std::vector<std::size_t> positions = {0, 20, 3, 30, 15, 66, 40, 67, 5};
  const auto run = [&](bool reuse, int threads) {
    SegmentationConfig config;
    config.reuse_silent_chunks = reuse;
    config.threads = threads;
    SegmentationModel model(model_path, config);
    return segment(model, audio, positions);
  };
  const auto every_chunk_run = run(false, 1);
  EXPECT_TRUE(bitwise_equal(run(true, 1), every_chunk_run));
  EXPECT_TRUE(bitwise_equal(run(true, 2), every_chunk_run));
}

TEST(SegmentationModel, ThreadCountDoesNotChangeOutput) {
  PARLEY_REQUIRE_SHARED(model_path, kFp16Model);
  PARLEY_REQUIRE_SHARED(clip, kClip);
  const auto audio = parley::audio::load_mono_16k(clip);
  const auto one_thread = run_chunks(model_path, audio, 1, 1);

  SegmentationConfig config;
  config.threads = 3;
  SegmentationModel model(model_path, config);
  // Counts the chunks done as the run reports them.
  struct CountingFeed : testing::ChunkFeed {
    using ChunkFeed::ChunkFeed;
    void chunks_done(std::size_t count) override { reported.push_back(count); }
    std::vector<std::size_t> reported;
  } feed(audio, kChunkPositions);
  const auto three_threads = segment(model, feed);
  const std::vector<std::size_t>& reported = feed.reported;
  EXPECT_TRUE(bitwise_equal(one_thread, three_threads));
  ASSERT_EQ(reported.size(), kChunkPositions.size());
  for (std::size_t i = 0; i < reported.size(); ++i) EXPECT_EQ(reported[i], i + 1);
}

// Each call's scores reach the feed once, in chunk order, whichever worker finished it first: the
// run keeps none (holding every chunk's scores until the end cost 59 MB an hour of audio, twice
// over with the final copy: docs/corpus.md, "Memory").
TEST(SegmentationModel, ScoresReachTheFeedInChunkOrder) {
  PARLEY_REQUIRE_SHARED(model_path, kFp16Model);
  PARLEY_REQUIRE_SHARED(clip, kClip);
  const auto audio = parley::audio::load_mono_16k(clip);
  const auto kept = run_chunks(model_path, audio, 1, 1);

  SegmentationConfig config;
  config.threads = 3;
  SegmentationModel model(model_path, config);
  // Writes each call's scores into `handed_on` where its chunks belong.
  struct CopyingFeed : SegmentationFeed {
    CopyingFeed(const std::vector<float>& audio, NdArray<float>& target)
        : chunks(audio, kChunkPositions), handed_on(target) {}
    void read_chunk(std::size_t chunk, std::span<float> samples) override {
      chunks.read_chunk(chunk, samples);
    }
    void take_scores(std::size_t first_chunk, NdArray<float> log_probabilities) override {
      EXPECT_EQ(first_chunk, chunks_handed_on);
      std::copy_n(log_probabilities.data(), log_probabilities.size(),
                  handed_on.data() + first_chunk * 589 * 7);
      chunks_handed_on += log_probabilities.dim(0);
    }
    testing::ChunkFeed chunks;
    NdArray<float>& handed_on;
    std::size_t chunks_handed_on = 0;
  };
  NdArray<float> handed_on(kept.shape());
  CopyingFeed feed(audio, handed_on);
  model.run(kChunkPositions.size(), feed);
  EXPECT_EQ(feed.chunks_handed_on, kChunkPositions.size());
  EXPECT_TRUE(bitwise_equal(kept, handed_on));
}

TEST(SegmentationModel, ErrorInReadingAChunkReachesCaller) {
  PARLEY_REQUIRE_SHARED(model_path, kFp16Model);
  SegmentationConfig config;
  config.threads = 2;
  SegmentationModel model(model_path, config);
  struct FailingFeed : ScoreKeepingFeed {
    void read_chunk(std::size_t chunk, std::span<float> /*samples*/) override {
      if (chunk == 3) fail("chunk {} is unreadable", chunk);
    }
  } feed;
  EXPECT_THROW(model.run(5, feed), Error);
}

// The rewrite only changes declared shapes (docs/segmentation.md), so batching must not change
// what the model computes for each chunk.
TEST(SegmentationDynamicBatch, RewriteMatchesPerChunkRunsOnRealAudio) {
  PARLEY_REQUIRE_SHARED(fixed_model, kFp16Model);
  PARLEY_REQUIRE_SHARED(clip, kClip);
  PARLEY_REQUIRE_DERIVED_MODEL(dynamic_model, "make_dynamic_batch.py", fixed_model,
                               "segmentation-3.0-fp16-dynbatch.onnx");
  const auto audio = parley::audio::load_mono_16k(clip);
  {
    SegmentationModel model(dynamic_model, SegmentationConfig{});
    EXPECT_TRUE(model.signature().batch_is_dynamic);
    EXPECT_EQ(model.signature().input_name, "waveform");
  }
  const auto per_chunk = run_chunks(fixed_model, audio, 1, 1);
  const auto rewritten_per_chunk = run_chunks(dynamic_model, audio, 1, 1);
  EXPECT_TRUE(bitwise_equal(per_chunk, rewritten_per_chunk));
  // Several chunks per call would round ORT's float16 LSTM differently (by up to one float16
  // step, 0.0156): float16 models run one chunk per call on the CPU whatever batch_size.
  SegmentationConfig batched_config;
  batched_config.batch_size = 6;
  EXPECT_EQ(SegmentationModel(dynamic_model, batched_config).effective_batch_size(), 1u);
  EXPECT_TRUE(bitwise_equal(per_chunk, run_chunks(dynamic_model, audio, 2, 6)));
}

// A float32 model exported with its batch fixed to 1 is made dynamic on the CPU for batches of
// several chunks, and every call is padded to the whole batch: a chunk's scores are the same
// bits whichever chunks share its call and wherever it falls in the run.
TEST(SegmentationDynamicBatch, CpuBatchResultDoesNotDependOnTheOtherChunksOfTheCall) {
  PARLEY_REQUIRE_SHARED(fixed_model, kFp16Model);
  PARLEY_REQUIRE_SHARED(clip, kClip);
  PARLEY_REQUIRE_FOLDED_FLOAT32_MODEL(folded, fixed_model);
  const auto audio = parley::audio::load_mono_16k(clip);
  SegmentationConfig config;
  config.batch_size = 4;
  SegmentationModel model(folded, config);
  EXPECT_TRUE(model.signature().batch_is_dynamic);
  ASSERT_EQ(model.effective_batch_size(), 4u);
  const auto calls = model.plan_calls(6);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls.back().count, 2u);
  EXPECT_EQ(calls.back().bucket, 4u) << "the last call is padded";

  const auto alone = segment(model, audio, kChunkPositions);
  // The same chunks after three others, so that each lands in another call and row.
  std::vector<std::size_t> shifted = {3, 18, 25};
  shifted.insert(shifted.end(), kChunkPositions.begin(), kChunkPositions.end());
  const auto together = segment(model, audio, shifted);
  const std::size_t row = alone.size() / alone.dim(0);
  EXPECT_EQ(std::memcmp(alone.data(), together.data() + 3 * row, alone.size() * sizeof(float)), 0);

  for (const std::size_t other_batch : {2u, 3u, 8u}) {
    SegmentationConfig other_config;
    other_config.batch_size = other_batch;
    SegmentationModel other(folded, other_config);
    const auto with_other = segment(other, audio, kChunkPositions);
    EXPECT_TRUE(bitwise_equal(alone, with_other)) << "batch " << other_batch;
  }
  // Against one chunk per call: rounding only, the same decisions.
  SegmentationConfig one_config;
  one_config.batch_size = 1;
  SegmentationModel one_per_call(folded, one_config);
  const auto per_chunk = segment(one_per_call, audio, kChunkPositions);
  EXPECT_LE(max_abs_difference(per_chunk, alone), 1e-4f);
  const auto agreement = testing::permutation_agreement(testing::decode_powerset(alone),
                                                        testing::decode_powerset(per_chunk));
  EXPECT_GE(agreement.fraction(), 0.999);
}

// The live diarizer segments one window per run: capping the CPU rows at 2 drops the padding
// rows of a larger batch without changing a bit (2 rows keep the matrix kernels).
TEST(SegmentationDynamicBatch, CpuRowsCapDropsPaddingRowsWithTheSameBits) {
  PARLEY_REQUIRE_SHARED(fixed_model, kFp16Model);
  PARLEY_REQUIRE_SHARED(clip, kClip);
  PARLEY_REQUIRE_FOLDED_FLOAT32_MODEL(folded, fixed_model);
  const auto audio = parley::audio::load_mono_16k(clip);
  SegmentationConfig config;
  config.batch_size = 4;
  SegmentationModel model(folded, config);
  const auto one = model.plan_calls(1, 2);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one.front().count, 1u);
  EXPECT_EQ(one.front().bucket, 2u) << "one window, one padding row";
  EXPECT_EQ(model.plan_calls(1).front().bucket, 4u);
  EXPECT_EQ(model.plan_calls(5, 2).size(), 3u);
  EXPECT_EQ(model.plan_calls(5, 8).size(), 2u) << "the cap never exceeds the batch";

  const auto whole = segment(model, audio, kChunkPositions);
  const auto capped = segment(model, audio, kChunkPositions, 2);
  EXPECT_TRUE(bitwise_equal(whole, capped));
  for (std::size_t i = 0; i < kChunkPositions.size(); ++i) {
    const std::vector<std::size_t> alone{kChunkPositions[i]};
    const auto single = segment(model, audio, alone, 2);
    const std::size_t row = whole.size() / whole.dim(0);
    EXPECT_EQ(std::memcmp(single.data(), whole.data() + i * row, row * sizeof(float)), 0)
        << "chunk " << i;
  }
}

TEST(SegmentationDynamicBatch, Float32UpcastRunsBatched) {
  PARLEY_REQUIRE_SHARED(fixed_model, kFp16Model);
  PARLEY_REQUIRE_SHARED(clip, kClip);
  PARLEY_REQUIRE_DERIVED_MODEL(dynamic_model, "make_dynamic_batch.py", fixed_model,
                               "segmentation-3.0-fp16-dynbatch.onnx");
  PARLEY_REQUIRE_DERIVED_MODEL(fp32_model, "upcast_fp16_model.py", dynamic_model,
                               "segmentation-3.0-fp32-dynbatch.onnx");
  const auto audio = parley::audio::load_mono_16k(clip);
  {
    SegmentationModel model(fp32_model, SegmentationConfig{});
    EXPECT_TRUE(model.signature().batch_is_dynamic);
  }
  const auto fp32_per_chunk = run_chunks(fp32_model, audio, 1, 1);
  const auto fp32_batched = run_chunks(fp32_model, audio, 2, 3);
  const float batching_difference = max_abs_difference(fp32_per_chunk, fp32_batched);
  std::printf("fp32 batch 3 vs per chunk: max |difference| %.3g\n", double(batching_difference));
  EXPECT_LE(batching_difference, 1e-6f);

  // Same weights, float32 arithmetic instead of float16 intermediates: decisions barely move.
  const auto fp16 = run_chunks(fixed_model, audio, 1, 1);
  const auto agreement = testing::permutation_agreement(testing::decode_powerset(fp32_batched),
                                                        testing::decode_powerset(fp16));
  std::printf("fp32 upcast vs fp16 frame agreement: %.4f\n", agreement.fraction());
  EXPECT_GE(agreement.fraction(), 0.99);
}

}  // namespace
}  // namespace parley::stages
