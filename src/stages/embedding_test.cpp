#include "stages/embedding.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <numbers>
#include <vector>

#include "core/error.h"
#include "core/npz.h"
#include "graph/embedding_model_test_support.h"
#include "graph/onnx_graph.h"
#include "runtime/onnx_session.h"
#include "runtime/session_share.h"
#include "stages/speed_twin_test_support.h"
#include "stages/stats_pooling.h"
#include "testing/shared_data.h"

namespace parley::stages {
namespace {

NdArray<float> test_waveforms(std::size_t batch, std::size_t samples, std::uint32_t seed) {
  NdArray<float> waveforms({batch, samples});
  for (std::size_t b = 0; b < batch; ++b) {
    const double pitch = 110.0 * static_cast<double>(b + 1);
    for (std::size_t i = 0; i < samples; ++i) {
      seed = seed * 1664525u + 1013904223u;
      const double noise = 0.02 * (static_cast<double>(seed >> 8) / 16777216.0 - 0.5);
      const double t = static_cast<double>(i) / 16000.0;
      waveforms(b, i) =
          static_cast<float>(0.2 * std::sin(2.0 * std::numbers::pi * pitch * t) *
                                 (1.0 + 0.5 * std::sin(2.0 * std::numbers::pi * 3.0 * t)) +
                             noise);
    }
  }
  return waveforms;
}

EmbeddingConfig wespeaker_epsilon_config() {
  EmbeddingConfig config;
  config.variance_epsilon = 1e-7;  // the test model's TSTP, like WeSpeaker's export
  return config;
}

// The key check of the split: with an all-ones mask, pooling in C++ must reproduce the unsplit
// model, whose own pooling is unweighted.
double max_difference_to_unsplit_model(const std::string& model_bytes, const std::string& name,
                                       const EmbeddingConfig& config, std::size_t samples) {
  EmbeddingExtractor extractor(model_bytes, name, config);
  const auto waveforms = test_waveforms(2, samples, 17);
  const NdArray<float> ones({2, 1, 589}, 1.0f);
  const auto pooled = extractor.embed(waveforms, ones);

  runtime::OnnxSession full(runtime::ModelBuffer{model_bytes, name}, config.session);
  const auto features = extractor.features(waveforms);
  const auto expected = full.run({{extractor.split().features_input, &features}},
                                 {extractor.split().embedding_output})
                            .at(0);
  EXPECT_EQ(pooled.shape(), (std::vector<std::size_t>{2, 1, extractor.dimension()}));
  EXPECT_EQ(expected.size(), pooled.size());
  double worst = 0.0;
  for (std::size_t i = 0; i < pooled.size(); ++i) {
    worst = std::max(worst, static_cast<double>(std::abs(pooled(i) - expected(i))));
  }
  return worst;
}

TEST(Embedding, AllOnesMaskReproducesTheUnsplitModel) {
  const double worst = max_difference_to_unsplit_model(
      graph::testing::make_test_embedding_model(), "test model", wespeaker_epsilon_config(), 16000);
  RecordProperty("max_abs_difference", std::to_string(worst));
  EXPECT_LT(worst, 1e-4);
}

TEST(Embedding, AllOnesMaskReproducesTheSpeedTwin) {
  const std::filesystem::path path = testing::speed_twin_for_tests();
  if (path.empty()) GTEST_SKIP() << "could not generate the speed twin (needs python3-onnx)";
  EmbeddingConfig config;
  config.variance_epsilon = 1e-7;  // tools/make_speed_twin.py's TSTP epsilon, as WeSpeaker's
  const double worst =
      max_difference_to_unsplit_model(graph::read_model_bytes(path), path.string(), config, 16000);
  RecordProperty("max_abs_difference", std::to_string(worst));
  EXPECT_LT(worst, 1e-4);
  // pyannote's own pooling adds no epsilon: measured, the difference stays small.
  const double pyannote_worst = max_difference_to_unsplit_model(
      graph::read_model_bytes(path), path.string(), EmbeddingConfig{}, 16000);
  RecordProperty("max_abs_difference_without_epsilon", std::to_string(pyannote_worst));
  EXPECT_LT(pyannote_worst, 1e-2);
}

TEST(Embedding, MinimumCleanFramesFollowPyannote) {
  // community-1: ceil(589 * 400 / 160000) = 2, so a speaker needs 3 clean frames.
  EXPECT_EQ(min_clean_frames(589, 400, 160000), 2u);
  EXPECT_EQ(min_clean_frames(589, 160000, 160000), 589u);
  EXPECT_EQ(min_clean_frames(100, 1, 1000), 1u);
  EXPECT_THROW(min_clean_frames(589, 400, 0), Error);
}

TEST(Embedding, MasksExcludeOverlapUnlessTooFewCleanFramesRemain) {
  // One chunk, 9 frames, 3 speakers. Speaker 0 speaks on frames 0-2 and 4-5, speaker 1 on 4-8,
  // speaker 2 on 1-3; frame 7 holds a NaN, as pyannote's stitched segmentations can.
  // Clean (single-speaker) frames: 0, 3, 6, 8 -- not 7: numpy's `NaN < 2` is false.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<std::vector<float>> by_frame{{1, 0, 0}, {1, 0, 1},   {1, 0, 1},
                                                 {0, 0, 1}, {1, 1, 0},   {1, 1, 0},
                                                 {0, 1, 0}, {0, 1, nan}, {0, 1, 0}};
  const std::size_t frames = by_frame.size();
  NdArray<float> segmentation({1, frames, 3});
  for (std::size_t f = 0; f < frames; ++f) {
    for (std::size_t s = 0; s < 3; ++s) segmentation(0, f, s) = by_frame[f][s];
  }
  const auto masks = select_embedding_masks(segmentation, true, 1);
  auto mask = [&](const NdArray<float>& all, std::size_t s) {
    return std::vector<float>(all.data() + s * frames, all.data() + (s + 1) * frames);
  };
  // Speaker 0 has one clean frame (0), not more than 1: its full mask is used.
  EXPECT_EQ(mask(masks, 0), (std::vector<float>{1, 1, 1, 0, 1, 1, 0, 0, 0}));
  // Speaker 1 has two clean frames (6, 8): overlap frames 4-5 and the NaN frame 7 are removed.
  EXPECT_EQ(mask(masks, 1), (std::vector<float>{0, 0, 0, 0, 0, 0, 1, 0, 1}));
  // Speaker 2 has one clean frame (3): full mask, its NaN read as 0.
  EXPECT_EQ(mask(masks, 2), (std::vector<float>{0, 1, 1, 1, 0, 0, 0, 0, 0}));

  const auto kept = select_embedding_masks(segmentation, false, 1);
  EXPECT_EQ(mask(kept, 1), (std::vector<float>{0, 0, 0, 0, 1, 1, 1, 1, 1}));
  EXPECT_EQ(mask(kept, 2), (std::vector<float>{0, 1, 1, 1, 0, 0, 0, 0, 0}));
  EXPECT_THROW(select_embedding_masks(NdArray<float>({2, 3}), true, 1), Error);
}

// pyannote's raw embeddings for (chunk, speaker) pairs whose resampled mask is all zero equal
// the linear layer's bias (pooled statistics are exactly 0). Which pairs those are depends on
// every rule reproduced here: exclude_overlap, the "> 2 clean frames" fallback and nearest
// resampling of 589 frames to the ResNet's 125. The goldens come from the real model.
TEST(Embedding, GoldenBiasPairsAreExactlyThoseWithNoPooledFrame) {
  PARLEY_REQUIRE_SHARED(root, "goldens/pyannote-community1");
  std::size_t clips = 0;
  std::size_t pairs = 0;
  std::size_t bias_pairs = 0;
  std::size_t missed_only_by_resampling = 0;
  std::size_t mismatches_without_exclusion = 0;
  const auto sources = nearest_source_indices(589, 125);
  for (const auto& entry : std::filesystem::directory_iterator(root)) {
    const auto embeddings_path = entry.path() / "raw_embeddings.npz";
    const auto segmentations_path = entry.path() / "segmentations.npz";
    if (!std::filesystem::exists(embeddings_path) || !std::filesystem::exists(segmentations_path)) {
      continue;
    }
    ++clips;
    const auto embeddings =
        npz_get(read_npz(embeddings_path), "embeddings", embeddings_path).as<float>();
    const auto segmentations =
        npz_get(read_npz(segmentations_path), "segmentations", segmentations_path).as<float>();
    const std::size_t chunks = segmentations.dim(0);
    const std::size_t frames = segmentations.dim(1);
    const std::size_t speakers = segmentations.dim(2);
    const std::size_t dimension = embeddings.dim(2);
    ASSERT_EQ(frames, 589u);
    ASSERT_EQ(embeddings.dim(0), chunks);

    const auto masks =
        select_embedding_masks(segmentations, true, min_clean_frames(589, 400, 160000));
    const auto full_masks = select_embedding_masks(segmentations, false, 0);
    auto pooled_nothing = [&](const NdArray<float>& all, std::size_t c, std::size_t s) {
      const float* mask = all.data() + (c * speakers + s) * frames;
      for (auto source : sources) {
        if (mask[source] != 0.0f) return false;
      }
      return true;
    };
    // The bias: the embedding of any pair whose speaker never speaks in the chunk.
    std::vector<float> bias;
    for (std::size_t c = 0; c < chunks && bias.empty(); ++c) {
      for (std::size_t s = 0; s < speakers && bias.empty(); ++s) {
        const float* mask = full_masks.data() + (c * speakers + s) * frames;
        if (std::all_of(mask, mask + frames, [](float v) { return v == 0.0f; })) {
          bias.assign(embeddings.data() + (c * speakers + s) * dimension,
                      embeddings.data() + (c * speakers + s + 1) * dimension);
        }
      }
    }
    ASSERT_FALSE(bias.empty()) << entry.path();
    for (std::size_t c = 0; c < chunks; ++c) {
      for (std::size_t s = 0; s < speakers; ++s) {
        const float* embedding = embeddings.data() + (c * speakers + s) * dimension;
        const bool is_bias = std::equal(bias.begin(), bias.end(), embedding);
        const bool predicted = pooled_nothing(masks, c, s);
        EXPECT_EQ(is_bias, predicted)
            << entry.path().filename() << " chunk " << c << " speaker " << s;
        ++pairs;
        bias_pairs += is_bias ? 1 : 0;
        const float* mask = masks.data() + (c * speakers + s) * frames;
        if (predicted && std::any_of(mask, mask + frames, [](float v) { return v != 0.0f; })) {
          ++missed_only_by_resampling;
        }
        if (pooled_nothing(full_masks, c, s) != is_bias) ++mismatches_without_exclusion;
      }
    }
  }
  ASSERT_GT(clips, 0u);
  RecordProperty("pairs", std::to_string(pairs));
  RecordProperty("bias_pairs", std::to_string(bias_pairs));
  // Pairs with speech in their 589-frame mask that nearest resampling to 125 frames drops: they
  // prove the resampling rule, not only the masks.
  EXPECT_GT(missed_only_by_resampling, 0u);
  // Without overlap exclusion the prediction is wrong somewhere: the test can fail.
  EXPECT_GT(mismatches_without_exclusion, 0u);
}

// 16-bit PCM mono WAV samples as pyannote loads them (divided by 32768).
std::vector<float> read_pcm16_wav(const std::filesystem::path& path) {
  std::ifstream stream(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(stream)),
                          std::istreambuf_iterator<char>());
  std::size_t position = 12;
  while (position + 8 <= bytes.size()) {
    std::uint32_t size = 0;
    std::memcpy(&size, bytes.data() + position + 4, 4);
    if (std::string(bytes.data() + position, 4) == "data") {
      std::vector<float> samples(std::min<std::size_t>(size, bytes.size() - position - 8) / 2);
      for (std::size_t i = 0; i < samples.size(); ++i) {
        std::int16_t value = 0;
        std::memcpy(&value, bytes.data() + position + 8 + 2 * i, 2);
        samples[i] = static_cast<float>(value) / 32768.0f;
      }
      return samples;
    }
    position += 8 + size + (size % 2);
  }
  ADD_FAILURE() << path << ": no data chunk";
  return {};
}

// Only with the real WeSpeaker ResNet34-LM export, which cannot be downloaded on the build
// machines: pyannote's raw embeddings of the tutorial sample, chunk by chunk.
TEST(Embedding, RealModelReproducesGoldenRawEmbeddings) {
  PARLEY_REQUIRE_OPTIONAL_SHARED(model, "models/voxceleb_resnet34_LM.onnx");
  PARLEY_REQUIRE_SHARED(golden, "goldens/pyannote-community1/02_pyannote_sample");
  const auto golden_embeddings =
      npz_get(read_npz(golden / "raw_embeddings.npz"), "embeddings", golden / "raw_embeddings.npz")
          .as<float>();
  const auto segmentations =
      npz_get(read_npz(golden / "segmentations.npz"), "segmentations", golden / "segmentations.npz")
          .as<float>();
  const auto audio = read_pcm16_wav(golden / "clip_16k.wav");
  const std::size_t chunks = 6;  // of 21: 10 s windows every 1 s
  const std::size_t samples = 160000;
  const std::size_t speakers = segmentations.dim(2);
  const std::size_t frames = segmentations.dim(1);
  NdArray<float> waveforms({chunks, samples}, 0.0f);
  NdArray<float> segmentation({chunks, frames, speakers});
  for (std::size_t c = 0; c < chunks; ++c) {
    for (std::size_t i = 0; i < samples && c * 16000 + i < audio.size(); ++i) {
      waveforms(c, i) = audio[c * 16000 + i];
    }
    std::copy(segmentations.data() + c * frames * speakers,
              segmentations.data() + (c + 1) * frames * speakers,
              segmentation.data() + c * frames * speakers);
  }
  EmbeddingExtractor extractor(model, EmbeddingConfig{});
  const auto embeddings = extractor.embed_chunks(waveforms, segmentation);
  const std::size_t dimension = extractor.dimension();
  ASSERT_EQ(dimension, golden_embeddings.dim(2));
  double worst_cosine = 1.0;
  for (std::size_t c = 0; c < chunks; ++c) {
    for (std::size_t s = 0; s < speakers; ++s) {
      double dot = 0.0;
      double ours = 0.0;
      double theirs = 0.0;
      for (std::size_t d = 0; d < dimension; ++d) {
        const double a = embeddings(c, s, d);
        const double b = golden_embeddings(c, s, d);
        dot += a * b;
        ours += a * a;
        theirs += b * b;
      }
      worst_cosine = std::min(worst_cosine, dot / std::sqrt(ours * theirs));
    }
  }
  RecordProperty("worst_cosine", std::to_string(worst_cosine));
  EXPECT_GT(worst_cosine, 0.99);
}

TEST(Embedding, MaskWeightsChangeTheEmbedding) {
  EmbeddingExtractor extractor(graph::testing::make_test_embedding_model(), "test model",
                               EmbeddingConfig{});
  const auto waveforms = test_waveforms(1, 24000, 5);
  NdArray<float> weights({1, 3, 100}, 0.0f);
  for (std::size_t f = 0; f < 100; ++f) {
    weights(0, 0, f) = 1.0f;
    weights(0, 1, f) = f < 50 ? 1.0f : 0.0f;
  }
  const auto embeddings = extractor.embed(waveforms, weights);
  ASSERT_EQ(embeddings.shape(),
            (std::vector<std::size_t>{1, 3, graph::testing::kTestEmbeddingDim}));
  double difference = 0.0;
  for (std::size_t d = 0; d < extractor.dimension(); ++d) {
    difference += std::abs(embeddings(0, 0, d) - embeddings(0, 1, d));
    EXPECT_EQ(embeddings(0, 2, d), extractor.split().head.bias[d]);  // no frame: the bias
  }
  EXPECT_GT(difference, 1e-3);
}

TEST(Embedding, ChunkEmbeddingsFollowPyannoteGetEmbeddings) {
  EmbeddingConfig config;
  config.batch_size = 2;
  EmbeddingExtractor extractor(graph::testing::make_test_embedding_model(), "test model", config);
  const std::size_t chunks = 3;
  const std::size_t samples = 16000;
  const std::size_t frames = 59;
  const auto waveforms = test_waveforms(chunks, samples, 23);
  NdArray<float> segmentation({chunks, frames, 2}, 0.0f);
  for (std::size_t f = 0; f < frames; ++f) {
    segmentation(0, f, 0) = f < 40 ? 1.0f : 0.0f;
    segmentation(0, f, 1) = f >= 30 ? 1.0f : 0.0f;  // overlap on frames 30-39
    segmentation(2, f, 1) = 1.0f;
  }  // chunk 1: nobody speaks
  const auto embeddings = extractor.embed_chunks(waveforms, segmentation);
  ASSERT_EQ(embeddings.shape(), (std::vector<std::size_t>{chunks, 2, extractor.dimension()}));

  // The same computed pair by pair through embed(), as pyannote batches (chunk, speaker) pairs.
  const auto masks =
      select_embedding_masks(segmentation, true, min_clean_frames(frames, 400, samples));
  for (std::size_t c = 0; c < chunks; ++c) {
    NdArray<float> one({1, samples});
    std::copy(waveforms.data() + c * samples, waveforms.data() + (c + 1) * samples, one.data());
    for (std::size_t s = 0; s < 2; ++s) {
      NdArray<float> mask({1, 1, frames});
      std::copy(masks.data() + (c * 2 + s) * frames, masks.data() + (c * 2 + s + 1) * frames,
                mask.data());
      const auto expected = extractor.embed(one, mask);
      for (std::size_t d = 0; d < extractor.dimension(); ++d) {
        EXPECT_NEAR(embeddings(c, s, d), expected(0, 0, d), 1e-5) << c << "," << s;
      }
    }
  }
  for (std::size_t d = 0; d < extractor.dimension(); ++d) {
    EXPECT_EQ(embeddings(1, 0, d), extractor.split().head.bias[d]);
    EXPECT_NE(embeddings(0, 1, d), embeddings(2, 1, d));
  }

  // Batch size changes nothing but speed.
  EmbeddingConfig one_at_a_time = config;
  one_at_a_time.batch_size = 1;
  EmbeddingExtractor unbatched(graph::testing::make_test_embedding_model(), "test model",
                               one_at_a_time);
  const auto again = unbatched.embed_chunks(waveforms, segmentation);
  for (std::size_t i = 0; i < again.size(); ++i) EXPECT_NEAR(again(i), embeddings(i), 1e-5);
}

// Exact mode with the pooling inside the graph (what a CUDA run does) against pooling on the
// host: the same trunk frames and the same statistics, so the embeddings agree to float
// rounding: a silent chunk (the bias), a speaker on a single trunk frame (variance 0), a speaker
// with no frame left after resampling (the layer on empty statistics), overlap, a tail batch.
TEST(Embedding, ExactModePoolingInTheGraphEqualsPoolingOnTheHost) {
  const std::size_t chunks = 5;
  const std::size_t samples = 160000;
  const std::size_t frames = 589;
  const auto waveforms = test_waveforms(chunks, samples, 41);
  NdArray<float> segmentation({chunks, frames, 3}, 0.0f);
  for (std::size_t c = 0; c < chunks; ++c) {
    if (c == 2) continue;  // silent
    for (std::size_t f = 0; f < frames; ++f) {
      segmentation(c, f, (f / 150 + c) % 3) = 1.0f;
      if (f % 7 == 0 && f > 400) segmentation(c, f, (c + 1) % 3) = 1.0f;
    }
  }
  for (std::size_t f = 0; f < frames; ++f) {
    segmentation(3, f, 0) = 1.0f;
    segmentation(3, f, 1) = f == 300 ? 1.0f : 0.0f;  // one frame
    segmentation(3, f, 2) = f == 1 ? 1.0f : 0.0f;    // dropped by resampling to 125 frames
  }
  EmbeddingConfig host_config = wespeaker_epsilon_config();
  host_config.batch_size = 2;
  EmbeddingConfig graph_config = host_config;
  graph_config.pool_exact_in_graph = true;
  EmbeddingExtractor host(graph::testing::make_test_embedding_model(), "test model", host_config);
  EmbeddingExtractor graph(graph::testing::make_test_embedding_model(), "test model", graph_config);
  EXPECT_FALSE(host.pools_exact_in_graph()) << "the CPU pools on the host by default";
  ASSERT_TRUE(graph.pools_exact_in_graph());
  const auto expected = host.embed_chunks(waveforms, segmentation);
  const auto pooled = graph.embed_chunks(waveforms, segmentation);
  ASSERT_EQ(pooled.shape(), expected.shape());
  double worst = 0.0;
  for (std::size_t i = 0; i < pooled.size(); ++i) {
    worst = std::max(worst, static_cast<double>(std::abs(pooled(i) - expected(i))) /
                                (1.0 + std::abs(static_cast<double>(expected(i)))));
  }
  ::testing::Test::RecordProperty("worst_relative_difference", std::to_string(worst));
  EXPECT_LT(worst, 1e-4);
  for (std::size_t d = 0; d < graph.dimension(); ++d) {
    EXPECT_EQ(pooled(2, 0, d), graph.split().head.bias[d]) << "silent chunk: the bias";
    EXPECT_EQ(pooled(3, 2, d), graph.empty_pair_embedding()[d]) << "nothing left to pool";
  }
}

// Engines on one GPU run one session per model (runtime/session_share.h); the CPU shows the
// mechanism with a share that covers CPU sessions.
TEST(Embedding, ExtractorsGivenOneShareRunTheSameSessions) {
  const auto share =
      std::make_shared<runtime::SessionShare>(runtime::SessionShare::Scope::kEverySession);
  EmbeddingConfig config = wespeaker_epsilon_config();
  config.pool_exact_in_graph = true;
  const std::string model = graph::testing::make_test_embedding_model();
  EmbeddingExtractor first(model, "test model", config, share);
  EXPECT_EQ(share->size(), 1u) << "the trunk";
  first.open_pooled_session();
  EXPECT_EQ(share->size(), 2u) << "the trunk, and the trunk with pooling";
  EmbeddingExtractor second(model, "test model", config, share);
  second.open_pooled_session();
  EXPECT_EQ(share->size(), 2u) << "the second extractor opened nothing new";
  EmbeddingExtractor alone(model, "test model", config);
  alone.open_pooled_session();
  EXPECT_EQ(share->size(), 2u);

  NdArray<float> waveforms({2, 16000});
  for (std::size_t i = 0; i < waveforms.size(); ++i) {
    waveforms.data()[i] = 0.3f * std::sin(0.01f * static_cast<float>(i % 9973));
  }
  NdArray<float> segmentation({2, 589, 3});
  for (std::size_t f = 0; f < 589; ++f) {
    segmentation(0, f, 0) = 1.0f;
    segmentation(1, f, f % 3) = 1.0f;
  }
  const auto expected = alone.embed_chunks(waveforms, segmentation);
  EXPECT_EQ(first.embed_chunks(waveforms, segmentation).values(), expected.values());
  EXPECT_EQ(second.embed_chunks(waveforms, segmentation).values(), expected.values());
}

TEST(Embedding, RejectsInputsThatCannotBeEmbedded) {
  EmbeddingExtractor extractor(graph::testing::make_test_embedding_model(), "test model",
                               EmbeddingConfig{});
  EXPECT_THROW(extractor.features(NdArray<float>({1, 399})), Error);
  EXPECT_THROW(extractor.embed_chunks(NdArray<float>({2, 16000}), NdArray<float>({3, 59, 3})),
               Error);
  EmbeddingConfig bad;
  bad.batch_size = 0;
  EXPECT_THROW(EmbeddingExtractor(graph::testing::make_test_embedding_model(), "m", bad), Error);
  EXPECT_NE(EmbeddingConfig{}.to_string().find("exclude_overlap=true"), std::string::npos);
}

}  // namespace
}  // namespace parley::stages
