#include "stages/shared_trunk.h"
#include "stages/shared_trunk_pass.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/npz.h"
#include "graph/embedding_model_test_support.h"
#include "stages/segmentation_test_support.h"
#include "stages/stats_pooling.h"
#include "stages/trunk_test_support.h"
#include "testing/shared_data.h"

namespace parley::stages {
namespace {

constexpr int kSampleRate = 16000;

using testing::synthetic_recording;
using testing::test_model_config;

double max_abs_difference(const NdArray<float>& a, const NdArray<float>& b) {
  EXPECT_EQ(a.shape(), b.shape());
  double worst = 0.0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    worst = std::max(worst, static_cast<double>(std::abs(a(i) - b(i))));
  }
  return worst;
}

// Every chunk's embeddings, handed to `trunk` in ascending ranges of `range_chunks` chunks as
// the pipeline hands them: [chunks, speakers, dimension].
NdArray<float> embed_in_ranges(SharedTrunk& trunk, const NdArray<float>& segmentations,
                               std::size_t range_chunks, std::size_t dimension) {
  const std::size_t chunks = segmentations.dim(0);
  const std::size_t per_chunk = segmentations.dim(1) * segmentations.dim(2);
  const std::size_t speakers = segmentations.dim(2);
  NdArray<float> all({chunks, speakers, dimension});
  for (std::size_t first = 0; first < chunks; first += range_chunks) {
    const std::size_t count = std::min(range_chunks, chunks - first);
    NdArray<float> range({count, segmentations.dim(1), speakers});
    std::memcpy(range.data(), segmentations.data() + first * per_chunk,
                count * per_chunk * sizeof(float));
    const NdArray<float> part = trunk.embed_chunks(first, range);
    std::memcpy(all.data() + first * speakers * dimension, part.data(),
                part.size() * sizeof(float));
  }
  return all;
}

// Grid frames [first, first + count) of `full` [features, grid frames].
NdArray<float> grid_slice(const NdArray<float>& full, std::size_t first, std::size_t count) {
  NdArray<float> slice({full.dim(0), count});
  for (std::size_t k = 0; k < full.dim(0); ++k) {
    std::memcpy(slice.data() + k * count, full.data() + k * full.dim(1) + first,
                count * sizeof(float));
  }
  return slice;
}

// Blocks of 400 fbank frames with their margins must give exactly what one pass over the whole
// recording gives, in both phases of a 1 s step. The test model's trunk reaches 7 fbank frames
// each way (three 3-wide stride-2 convolutions, read from the graph: graph/receptive_field.h),
// so the smallest margin on the grid, 8 frames, covers it; a margin of 0 is refused when the
// trunk is made, as it would show the block edges.
TEST(SharedTrunk, BlocksEqualOnePassOverTheRecording) {
  const auto audio = synthetic_recording(35 * kSampleRate + 1234);
  const frames::ChunkPlan plan =
      frames::plan_chunks(static_cast<std::int64_t>(audio.size()), kSampleRate);
  EmbeddingExtractor extractor(graph::testing::make_test_embedding_model(), "test model",
                               test_model_config());
  EXPECT_EQ(extractor.trunk_receptive_field().reach(), 7);
  for (std::size_t margin : {8u, 16u}) {
    SharedTrunkConfig config;
    config.block_frames = 400;
    config.pass_frames = 160;  // batches of passes inside each block
    config.margin_frames = margin;
    config.exact_alignment = true;
    SharedTrunk trunk(extractor, audio, plan, config);
    const std::size_t total = trunk.total_frames();
    ASSERT_EQ(total,
              static_cast<std::size_t>(plan.chunk_offset(plan.num_chunks() - 1)) / 160 + 998);
    double worst = 0.0;
    for (std::size_t phase : {0u, 4u}) {
      const std::size_t grid = (total - phase + 7) / 8;
      // One pass over every frame of the phase: no block edge anywhere.
      const NdArray<float> full = trunk.single_pass_frames(phase, 0, grid);
      for (std::int64_t c = 0; c < plan.num_chunks(); ++c) {
        const auto start = static_cast<std::size_t>(plan.chunk_offset(c)) / 160;
        if (start % 8 != phase) continue;
        const NdArray<float> frames = trunk.chunk_frames(static_cast<std::size_t>(c));
        ASSERT_EQ(frames.dim(1), trunk.frames_per_chunk());
        worst = std::max(worst, max_abs_difference(frames, grid_slice(full, start / 8, 125)));
      }
    }
    RecordProperty("margin_" + std::to_string(margin) + "_max_abs_difference",
                   std::to_string(worst));
    EXPECT_LT(worst, 1e-5) << "blocks differ from one pass: the margin does not cover the "
                              "receptive field";
  }
  SharedTrunkConfig too_narrow;
  too_narrow.margin_frames = 0;
  try {
    SharedTrunk trunk(extractor, audio, plan, too_narrow);
    FAIL() << "a margin narrower than the trunk's reach must be refused";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("embedding_mode exact"), std::string::npos)
        << error.what();
  }
}

// Fbank features and shared-mode embeddings are the same bit for bit for any thread count.
TEST(SharedTrunk, SameEmbeddingsForAnyThreadCount) {
  const auto audio = synthetic_recording(25 * kSampleRate);
  const frames::ChunkPlan plan =
      frames::plan_chunks(static_cast<std::int64_t>(audio.size()), kSampleRate);
  const auto chunks = static_cast<std::size_t>(plan.num_chunks());
  NdArray<float> segmentations({chunks, 589, 3}, 0.0f);
  for (std::size_t c = 0; c < chunks; ++c) {
    for (std::size_t f = 0; f < 589; ++f) {
      segmentations(c, f, (f / 97 + c) % 3) = 1.0f;
      if (f % 5 == 0) segmentations(c, f, (c + 1) % 3) = 1.0f;
    }
  }
  NdArray<float> waveforms({3, 160000});
  for (std::size_t i = 0; i < waveforms.size(); ++i) waveforms(i) = audio[(i * 7) % audio.size()];

  std::vector<NdArray<float>> embeddings;
  std::vector<NdArray<float>> features;
  for (int threads : {1, 3}) {
    EmbeddingExtractor extractor(graph::testing::make_test_embedding_model(), "test model",
                                 test_model_config(threads));
    features.push_back(extractor.features(waveforms));
    SharedTrunkConfig config;
    config.block_frames = 800;
    config.threads = threads;
    SharedTrunk trunk(extractor, audio, plan, config);
    embeddings.push_back(embed_in_ranges(trunk, segmentations, 4, extractor.dimension()));
  }
  EXPECT_EQ(features[0].values(), features[1].values());
  EXPECT_EQ(embeddings[0].values(), embeddings[1].values());
}

// Memory stays bounded: blocks behind the chunks being embedded are freed.
TEST(SharedTrunk, FreesBlocksNoLaterChunkNeeds) {
  const auto audio = synthetic_recording(4 * 60 * kSampleRate);
  const frames::ChunkPlan plan =
      frames::plan_chunks(static_cast<std::int64_t>(audio.size()), kSampleRate);
  const auto chunks = static_cast<std::size_t>(plan.num_chunks());
  EmbeddingExtractor extractor(graph::testing::make_test_embedding_model(), "test model",
                               test_model_config());
  SharedTrunkConfig config;
  config.block_frames = 1600;  // 16 s
  config.exact_alignment = true;
  SharedTrunk trunk(extractor, audio, plan, config);
  NdArray<float> range({32, 589, 3}, 0.0f);
  for (std::size_t f = 0; f < 589; f += 2) {
    for (std::size_t c = 0; c < 32; ++c) range(c, f, 0) = 1.0f;
  }
  std::size_t most_held = 0;
  for (std::size_t first = 0; first + 32 <= chunks; first += 32) {
    trunk.embed_chunks(first, range);
    most_held = std::max(most_held, trunk.blocks_held());
  }
  // 32 chunks span 41 s: at most 4 blocks of 16 s per phase (+1 straddling), two phases.
  EXPECT_LE(most_held, 10u);
  EXPECT_GE(trunk.trunk_passes(), 2u * (chunks * 100 / 1600) - 2);
}

// A pass's activations are the largest transient of a long recording, so the default passes
// stay short (about 63 s of fbank frames with margins), and the embeddings are exactly those of
// the 2-minute blocks used before: shortening passes bounds memory without changing the output.
TEST(SharedTrunk, DefaultPassesAreShortAndChangeNoEmbedding) {
  const auto audio = synthetic_recording(5 * 60 * kSampleRate);
  const frames::ChunkPlan plan =
      frames::plan_chunks(static_cast<std::int64_t>(audio.size()), kSampleRate);
  const auto chunks = static_cast<std::size_t>(plan.num_chunks());
  NdArray<float> segmentations({chunks, 589, 3}, 0.0f);
  for (std::size_t c = 0; c < chunks; ++c) {
    for (std::size_t f = 0; f < 589; ++f) segmentations(c, f, (f / 131 + c) % 3) = 1.0f;
  }
  EmbeddingExtractor extractor(graph::testing::make_test_embedding_model(), "test model",
                               test_model_config());
  const SharedTrunkConfig defaults;
  SharedTrunk short_passes(extractor, audio, plan, defaults);
  const NdArray<float> embedded =
      embed_in_ranges(short_passes, segmentations, 32, extractor.dimension());
  EXPECT_LE(short_passes.largest_pass_frames(), 6000u + 2 * 128u);

  SharedTrunkConfig two_minutes = defaults;
  two_minutes.block_frames = 12000;
  two_minutes.pass_frames = 12000;
  SharedTrunk long_passes(extractor, audio, plan, two_minutes);
  EXPECT_EQ(embed_in_ranges(long_passes, segmentations, 32, extractor.dimension()).values(),
            embedded.values());
  EXPECT_GT(long_passes.largest_pass_frames(), 12000u);
}

#if defined(__GLIBC__)
std::size_t anonymous_resident_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("RssAnon:", 0) == 0) return std::stoul(line.substr(8));
  }
  ADD_FAILURE() << "no RssAnon in /proc/self/status";
  return 0;
}

// Heap freed before a pass goes back to the system, not under the pass's activations: 40 MB
// freed below a live block stay resident after free() alone (glibc trims only the heap's top).
TEST(SharedTrunk, HandsFreedHeapBackBeforeAPass) {
  const auto audio = synthetic_recording(60 * kSampleRate);
  const frames::ChunkPlan plan =
      frames::plan_chunks(static_cast<std::int64_t>(audio.size()), kSampleRate);
  EmbeddingExtractor extractor(graph::testing::make_test_embedding_model(), "test model",
                               test_model_config());
  SharedTrunk trunk(extractor, audio, plan, SharedTrunkConfig{});
  std::vector<std::vector<char>> freed;
  for (int i = 0; i < 40 * 1024; ++i) freed.emplace_back(1000, 'x');
  const std::vector<char> above(1000, 'y');
  freed = {};
  const std::size_t before = anonymous_resident_kib();
  trunk.chunk_frames(0);
  EXPECT_LT(anonymous_resident_kib() + 20 * 1024, before) << above.size();
}
#endif

double cosine(const float* a, const float* b, std::size_t dimension) {
  double dot = 0.0, aa = 0.0, bb = 0.0;
  for (std::size_t d = 0; d < dimension; ++d) {
    dot += static_cast<double>(a[d]) * b[d];
    aa += static_cast<double>(a[d]) * a[d];
    bb += static_cast<double>(b[d]) * b[d];
  }
  return dot / std::sqrt(aa * bb);
}

struct Agreement {
  double worst = 1.0;             // worst cosine(shared, exact) over pairs pooling a frame
  double median_distance = 0.0;   // median of 1 - cosine(shared, exact)
  double control_distance = 0.0;  // median 1 - cosine between exact embeddings 1 s apart
};

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0.0 : values[values.size() / 2];
}

// Shared vs exact on `audio` with pyannote's segmentations of it, for every (chunk, speaker)
// pair whose mask pools at least one trunk frame (the others must be the bias in both modes).
// The control is what a slice taken from the wrong place would be compared with: the same
// speaker's exact embedding one chunk later (9 of 10 s of audio in common).
Agreement shared_vs_exact(EmbeddingExtractor& extractor, const std::vector<float>& audio,
                          const NdArray<float>& segmentations, const SharedTrunkConfig& config) {
  const frames::ChunkPlan plan =
      frames::plan_chunks(static_cast<std::int64_t>(audio.size()), kSampleRate);
  const auto chunks = static_cast<std::size_t>(plan.num_chunks());
  EXPECT_EQ(chunks, segmentations.dim(0));
  NdArray<float> waveforms({chunks, 160000});
  for (std::size_t c = 0; c < chunks; ++c) {
    frames::copy_chunk(audio, plan, static_cast<std::int64_t>(c),
                       std::span<float>(waveforms.data() + c * 160000, 160000));
  }
  const NdArray<float> exact = extractor.embed_chunks(waveforms, segmentations);
  SharedTrunk trunk(extractor, audio, plan, config);
  const NdArray<float> shared = trunk.embed_chunks(0, segmentations);
  const NdArray<float> masks = select_embedding_masks(segmentations, true, 2);
  const std::size_t dimension = extractor.dimension();
  auto pools_a_frame = [&](std::size_t c, std::size_t s) {
    const auto resampled =
        resample_nearest(std::span<const float>(masks.data() + (c * 3 + s) * 589, 589), 125);
    return std::any_of(resampled.begin(), resampled.end(), [](float w) { return w != 0.0f; });
  };
  Agreement agreement;
  std::vector<double> distances, control;
  for (std::size_t c = 0; c < chunks; ++c) {
    for (std::size_t s = 0; s < 3; ++s) {
      if (!pools_a_frame(c, s)) {
        EXPECT_EQ(0, std::memcmp(&shared(c, s, 0), &exact(c, s, 0), dimension * sizeof(float)))
            << "chunk " << c << " speaker " << s << " should be the bias in both modes";
        continue;
      }
      const double value = cosine(&shared(c, s, 0), &exact(c, s, 0), dimension);
      agreement.worst = std::min(agreement.worst, value);
      distances.push_back(1.0 - value);
      if (c + 1 < chunks && pools_a_frame(c + 1, s)) {
        control.push_back(1.0 - cosine(&exact(c, s, 0), &exact(c + 1, s, 0), dimension));
      }
    }
  }
  EXPECT_FALSE(distances.empty());
  EXPECT_FALSE(control.empty());
  agreement.median_distance = median(distances);
  agreement.control_distance = median(control);
  return agreement;
}

NdArray<float> golden_segmentations(const std::filesystem::path& golden, std::size_t chunks) {
  const NdArray<float> all =
      npz_get(read_npz(golden / "segmentations.npz"), "segmentations", golden / "segmentations.npz")
          .as<float>();
  NdArray<float> first({chunks, all.dim(1), all.dim(2)});
  std::memcpy(first.data(), all.data(), first.size() * sizeof(float));
  return first;
}

void record(const std::string& name, const Agreement& agreement) {
  ::testing::Test::RecordProperty(name + "_worst_cosine", std::to_string(agreement.worst));
  ::testing::Test::RecordProperty(name + "_median_distance",
                                  std::to_string(agreement.median_distance));
  ::testing::Test::RecordProperty(name + "_control_distance",
                                  std::to_string(agreement.control_distance));
}

// The tutorial sample (30 s, 21 chunks) with the small test model (random weights, a 15-frame
// receptive field). Its embeddings vary little between chunks (neighbouring chunks: median
// distance 1 - cosine = 0.0041), so besides a floor on the worst cosine (measured: 0.9936
// aligned, 0.9914 nearest, 0.9884 recording mean) the check is relative to that control:
// measured median distances 0.00064 aligned (6x closer than a neighbour), 0.0020 nearest (2x).
// A slice misplaced by a trunk frame or more, or uncentred features, fail both. The speed twin's
// numbers (full ResNet34, too slow for a unit test) are in docs/embedding.md.
TEST(SharedTrunk, CloseToExactModeOnARealRecording) {
  PARLEY_REQUIRE_SHARED(golden, "goldens/pyannote-community1/02_pyannote_sample");
  const auto audio = parley::audio::load_mono_16k(golden / "clip_16k.wav");
  const NdArray<float> segmentations = golden_segmentations(golden, 21);
  EmbeddingExtractor extractor(graph::testing::make_test_embedding_model(), "test model",
                               test_model_config());
  SharedTrunkConfig config;
  const Agreement nearest = shared_vs_exact(extractor, audio, segmentations, config);
  config.exact_alignment = true;
  const Agreement aligned = shared_vs_exact(extractor, audio, segmentations, config);
  config.exact_alignment = false;
  config.mean = SharedTrunkMean::kRecording;
  const Agreement recording_mean = shared_vs_exact(extractor, audio, segmentations, config);
  record("nearest", nearest);
  record("aligned", aligned);
  record("recording_mean", recording_mean);
  EXPECT_LT(aligned.median_distance, aligned.control_distance / 4.0);
  EXPECT_LT(nearest.median_distance, nearest.control_distance / 1.5);
  EXPECT_GT(aligned.worst, 0.99);
  EXPECT_GT(nearest.worst, 0.985);
  EXPECT_GT(recording_mean.worst, 0.98);
}

// Pooling inside the graph (graph/pooled_trunk_graph.h, what an accelerator runs) against
// pooling on the host, both on the CPU: the same trunk frames and the same statistics, so every
// (chunk, speaker) embedding agrees to float rounding, the last chunk's included: the last graph
// pass ends on the trunk grid, up to 7 fbank frames past the end (a recording shorter than a
// pass: far past it), and the graph masks those frames (valid_frames) so that its trunk pads
// with zeros where host blocks stop.
// Covered: chunk ranges split into passes of 4, a silent chunk (the bias), a speaker active
// on a single trunk frame (variance 0, not rounding noise divided by 1e-8), overlapping
// speakers, a range that is not a multiple of the pass, speech up to the last chunk's end.
TEST(SharedTrunk, PoolingInTheGraphEqualsPoolingOnTheHost) {
  EmbeddingExtractor extractor(graph::testing::make_test_embedding_model(), "test model",
                               test_model_config());
  const std::size_t dimension = extractor.dimension();
  for (const std::size_t seconds : {31, 12}) {
    const auto audio = synthetic_recording(seconds * kSampleRate + 777);
    const frames::ChunkPlan plan =
        frames::plan_chunks(static_cast<std::int64_t>(audio.size()), kSampleRate);
    const auto chunks = static_cast<std::size_t>(plan.num_chunks());
    NdArray<float> segmentations({chunks, 589, 3}, 0.0f);
    for (std::size_t c = 0; c < chunks; ++c) {
      if (c == 5) continue;  // silent
      for (std::size_t f = 0; f < 589; ++f) {
        segmentations(c, f, (f / 97 + c) % 3) = 1.0f;
        if (f % 5 == 0 && f > 300) segmentations(c, f, (c + 1) % 3) = 1.0f;
      }
    }
    // Chunk 7 (or the last): speaker 2 on one segmentation frame only, speaker 1 silent.
    const std::size_t single = std::min<std::size_t>(7, chunks - 1);
    for (std::size_t f = 0; f < 589; ++f) {
      segmentations(single, f, 0) = 1.0f;
      segmentations(single, f, 1) = 0.0f;
      segmentations(single, f, 2) = f == 200 ? 1.0f : 0.0f;
    }
    auto embed_all = [&](SharedTrunkPooling pooling) {
      SharedTrunkConfig config;
      config.pooling = pooling;
      config.chunks_per_pass = 4;
      SharedTrunk trunk(extractor, audio, plan, config);
      EXPECT_EQ(trunk.pools_in_graph(), pooling == SharedTrunkPooling::kGraph);
      if (pooling == SharedTrunkPooling::kGraph) {
        EXPECT_TRUE(trunk.total_frames() % 8 != 0 ||
                    trunk.total_frames() < trunk.graph_pass_frames())
            << "the last pass must run past the recording's end";
      }
      return embed_in_ranges(trunk, segmentations, 6, extractor.dimension());
    };
    const NdArray<float> host = embed_all(SharedTrunkPooling::kHost);
    const NdArray<float> graph = embed_all(SharedTrunkPooling::kGraph);
    double worst_inside = 1.0;
    double worst_last = 1.0;
    for (std::size_t c = 0; c < chunks; ++c) {
      for (std::size_t s = 0; s < 3; ++s) {
        const double value = cosine(&graph(c, s, 0), &host(c, s, 0), dimension);
        double& worst = c + 1 < chunks ? worst_inside : worst_last;
        worst = std::min(worst, value);
        if (c == 5 || (c == single && s == 1)) {
          EXPECT_EQ(0, std::memcmp(&graph(c, s, 0), &host(c, s, 0), dimension * sizeof(float)))
              << "chunk " << c << " speaker " << s << ": no weighted frame, same constant";
        }
      }
    }
    const std::string length = std::to_string(seconds) + "s";
    ::testing::Test::RecordProperty("worst_cosine_inside_" + length, std::to_string(worst_inside));
    ::testing::Test::RecordProperty("worst_cosine_last_chunk_" + length,
                                    std::to_string(worst_last));
    EXPECT_GT(worst_inside, 0.99999) << length;
    EXPECT_GT(worst_last, 0.99999) << length;
    // The single-frame speaker's statistics: its mean is that frame, its deviation 0, so its
    // embedding is far from the one a variance of rounding noise / 1e-8 would give.
    EXPECT_GT(cosine(&graph(single, 2, 0), &host(single, 2, 0), dimension), 0.99999) << length;
  }
}

// The features computed in the graph (graph/fbank_graph.h in front of the pooled trunk, what
// an accelerator runs) against the host's, both pooled in the graph on the CPU: the same log
// mel to float rounding and the same sliding-window means, so every (chunk, speaker) embedding
// agrees, the last chunk's included. Covers a recording shorter than one pass (its windows
// clamped at both ends) and one of several passes. On the CPU the default keeps the host's
// features, so CPU output does not change.
TEST(SharedTrunk, FeaturesInTheGraphEqualFeaturesOnTheHost) {
  EmbeddingExtractor extractor(graph::testing::make_test_embedding_model(), "test model",
                               test_model_config());
  for (const std::size_t seconds : {7, 31}) {
    const auto audio = synthetic_recording(seconds * kSampleRate + 555);
    const frames::ChunkPlan plan =
        frames::plan_chunks(static_cast<std::int64_t>(audio.size()), kSampleRate);
    const auto chunks = static_cast<std::size_t>(plan.num_chunks());
    NdArray<float> segmentations({chunks, 589, 3}, 0.0f);
    for (std::size_t c = 0; c < chunks; ++c) {
      for (std::size_t f = 0; f < 589; ++f) {
        segmentations(c, f, (f / 89 + c) % 3) = 1.0f;
        if (f % 7 == 0 && f > 250) segmentations(c, f, (c + 2) % 3) = 1.0f;
      }
    }
    auto embed_all = [&](SharedTrunkFeatures features) {
      SharedTrunkConfig config;
      config.pooling = SharedTrunkPooling::kGraph;
      config.features = features;
      config.chunks_per_pass = 4;
      SharedTrunk trunk(extractor, audio, plan, config);
      EXPECT_EQ(trunk.features_in_graph(), features == SharedTrunkFeatures::kGraph);
      return embed_in_ranges(trunk, segmentations, 6, extractor.dimension());
    };
    const NdArray<float> host = embed_all(SharedTrunkFeatures::kHost);
    const NdArray<float> graph = embed_all(SharedTrunkFeatures::kGraph);
    double worst = 1.0;
    for (std::size_t c = 0; c < chunks; ++c) {
      for (std::size_t s = 0; s < 3; ++s) {
        worst = std::min(worst, cosine(&graph(c, s, 0), &host(c, s, 0), extractor.dimension()));
      }
    }
    ::testing::Test::RecordProperty("worst_cosine_" + std::to_string(seconds) + "s",
                                    std::to_string(worst));
    EXPECT_GE(worst, 0.9999) << seconds << " s";
  }
  SharedTrunkConfig defaults;
  EXPECT_FALSE(shared_trunk_features_in_graph(defaults, extractor)) << "CPU: host features";
  defaults.pooling = SharedTrunkPooling::kGraph;
  EXPECT_FALSE(shared_trunk_features_in_graph(defaults, extractor))
      << "CPU, graph pooling: still host features unless asked";
  defaults.features = SharedTrunkFeatures::kGraph;
  EXPECT_TRUE(shared_trunk_features_in_graph(defaults, extractor));
  defaults.pooling = SharedTrunkPooling::kHost;
  EXPECT_FALSE(shared_trunk_features_in_graph(defaults, extractor)) << "host pooling: host";
}

// What a static-shape provider gets, forced on the CPU: the pooled graph opened from its
// content-addressed file through the compiled-graph cache for the one pass shape that
// pooled_pass_shape() names (what warm-cache compiles and the placement looks up), with the same
// embeddings as the session that takes every shape.
TEST(SharedTrunk, PooledPassShapeIsTheOneShapeTheGraphPassesOpen) {
  const auto audio = synthetic_recording(23 * kSampleRate + 321);
  const frames::ChunkPlan plan =
      frames::plan_chunks(static_cast<std::int64_t>(audio.size()), kSampleRate);
  const auto chunks = static_cast<std::size_t>(plan.num_chunks());
  NdArray<float> segmentations({chunks, 589, 3}, 0.0f);
  for (std::size_t c = 0; c < chunks; ++c) {
    for (std::size_t f = 0; f < 589; ++f) segmentations(c, f, (f / 131 + c) % 3) = 1.0f;
  }
  SharedTrunkConfig config;
  config.pooling = SharedTrunkPooling::kGraph;
  config.chunks_per_pass = 5;
  const auto cache_root = std::filesystem::temp_directory_path() /
                          ("parley_shared_trunk_shapes_" + std::to_string(::getpid()));
  std::filesystem::remove_all(cache_root);
  EmbeddingConfig per_shape_config = test_model_config();
  per_shape_config.batch_buckets = runtime::Buckets::powers_of_two(per_shape_config.batch_size);
  per_shape_config.compile_cache_root = cache_root;
  EmbeddingExtractor per_shape(graph::testing::make_test_embedding_model(), "test model",
                               per_shape_config);
  EmbeddingExtractor one_session(graph::testing::make_test_embedding_model(), "test model",
                                 test_model_config());
  SharedTrunk per_shape_trunk(per_shape, audio, plan, config);
  SharedTrunk one_session_trunk(one_session, audio, plan, config);
  const NdArray<float> actual = per_shape_trunk.embed_chunks(0, segmentations);
  const NdArray<float> expected = one_session_trunk.embed_chunks(0, segmentations);
  std::filesystem::remove_all(cache_root);
  EXPECT_LT(max_abs_difference(actual, expected), 1e-5);

  const PooledPassShape shape = pooled_pass_shape(config, plan.step_samples, plan.window_samples,
                                                  test_model_config().fbank, 3);
  EXPECT_EQ(shape.frames, per_shape_trunk.graph_pass_frames());
  EXPECT_EQ(shape.trunk_frames * config.time_stride, shape.frames);
  EXPECT_EQ(shape.pairs, 15u);
  ASSERT_GT(per_shape_trunk.trunk_passes(), 1u) << "several passes, all of one shape";
  EXPECT_EQ(per_shape.opened_shapes(),
            (std::vector<std::vector<runtime::InputShape>>{shape.inputs()}));
}

// chunks_per_pass counts one-second steps: at a 2 s step a pass holds half the chunks and spans
// the same audio (a short call pays one pass of its own length, not twice it), and the trunk's
// passes take the shape pooled_pass_shape() names, with the embeddings of host pooling.
TEST(SharedTrunk, PassesSpanTheSameAudioAtALongerStep) {
  EXPECT_EQ(pass_chunks_at_step(256, kSampleRate), 256u);
  EXPECT_EQ(pass_chunks_at_step(256, kSampleRate / 2), 256u);
  EXPECT_EQ(pass_chunks_at_step(256, 2 * kSampleRate), 128u);
  EXPECT_EQ(pass_chunks_at_step(1, 2 * kSampleRate), 1u);
  SharedTrunkConfig config;
  config.pooling = SharedTrunkPooling::kGraph;
  config.chunks_per_pass = 8;
  const FbankConfig fbank = test_model_config().fbank;
  const PooledPassShape one = pooled_pass_shape(config, kSampleRate, 10 * kSampleRate, fbank, 3);
  const PooledPassShape two =
      pooled_pass_shape(config, 2 * kSampleRate, 10 * kSampleRate, fbank, 3);
  EXPECT_EQ(two.pairs, 12u);
  EXPECT_LE(two.frames, one.frames) << "no more audio per pass than at a 1 s step";

  const auto audio = synthetic_recording(41 * kSampleRate + 123);
  const frames::ChunkPlan plan =
      frames::plan_chunks(static_cast<std::int64_t>(audio.size()), kSampleRate, 10.0, 2.0);
  const auto chunks = static_cast<std::size_t>(plan.num_chunks());
  NdArray<float> segmentations({chunks, 589, 3}, 0.0f);
  for (std::size_t c = 0; c < chunks; ++c) {
    for (std::size_t f = 0; f < 589; ++f) segmentations(c, f, (f / 131 + c) % 3) = 1.0f;
  }
  EmbeddingExtractor extractor(graph::testing::make_test_embedding_model(), "test model",
                               test_model_config());
  SharedTrunk graph(extractor, audio, plan, config);
  const NdArray<float> pooled = graph.embed_chunks(0, segmentations);
  EXPECT_EQ(graph.graph_pass_frames(), two.frames);
  EXPECT_GT(graph.trunk_passes(), 1u) << "several passes of 4 chunks";
  SharedTrunkConfig host_config = config;
  host_config.pooling = SharedTrunkPooling::kHost;
  SharedTrunk host(extractor, audio, plan, host_config);
  const NdArray<float> expected = host.embed_chunks(0, segmentations);
  double worst = 1.0;
  for (std::size_t c = 0; c < chunks; ++c) {
    for (std::size_t k = 0; k < 3; ++k) {
      worst = std::min(worst, cosine(&pooled(c, k, 0), &expected(c, k, 0), extractor.dimension()));
    }
  }
  EXPECT_GT(worst, 0.999);
}

// The margins must cover the trunk's reach; a trunk that mixes the whole time axis, or keeps a
// different time stride, cannot be shared at all; an unreadable one is only warned about.
// Graph pooling's pass lengths: whole passes of chunks_per_pass, and the shorter ones of
// tail_chunks_per_pass (counted in one-second steps as chunks_per_pass is; those not below it
// left out), shortest first: the buckets the placement plans, whose plan is the passes run.
TEST(SharedTrunk, PassLengthsAreTheWholePassAndTheShorterTails) {
  using Chunks = std::vector<std::size_t>;
  const SharedTrunkConfig defaults;
  EXPECT_EQ(pooled_pass_chunks(defaults, kSampleRate), (Chunks{64, 192, 256}));
  EXPECT_EQ(pooled_pass_chunks(defaults, 2 * kSampleRate), (Chunks{32, 96, 128}));
  SharedTrunkConfig small = defaults;
  small.chunks_per_pass = 8;
  EXPECT_EQ(pooled_pass_chunks(small, kSampleRate), (Chunks{8})) << "tails of a pass or more";
  small.tail_chunks_per_pass = {6, 2, 6};
  EXPECT_EQ(pooled_pass_chunks(small, kSampleRate), (Chunks{2, 6, 8}));
  EXPECT_EQ(pooled_pass_chunks(small, 2 * kSampleRate), (Chunks{1, 3, 4}));
  small.tail_chunks_per_pass.clear();
  EXPECT_EQ(pooled_pass_chunks(small, kSampleRate), (Chunks{8})) << "none: whole passes only";
  small.tail_chunks_per_pass = {0};
  EXPECT_THROW(small.validate(), Error);

  const FbankConfig fbank = test_model_config().fbank;
  const std::vector<PooledPassShape> shapes =
      pooled_pass_shapes(defaults, kSampleRate, 10 * kSampleRate, fbank, 3);
  ASSERT_EQ(shapes.size(), 3u);
  // 26,768 fbank frames a whole pass at a 1 s step; a quarter of the chunks, 7,568.
  EXPECT_EQ(shapes[0].frames, 7568u);
  EXPECT_EQ(shapes[1].frames, 20368u);
  EXPECT_EQ(shapes[2].frames, 26768u);
  EXPECT_EQ(shapes[0].pairs, 64u * 3u);
  EXPECT_EQ(shapes[2].inputs(),
            pooled_pass_shape(defaults, kSampleRate, 10 * kSampleRate, fbank, 3).inputs());
}

// A range shorter than a whole pass (a recording's rest after its whole passes) runs in the
// shortest pass that holds it, not in a whole pass moved back over chunks already embedded. The
// whole passes' embeddings do not change; the rest's are within rounding of a whole pass's and
// as close to host pooling as every graph pass is. Measured here, test model on the CPU: the
// rest's embeddings are not bit-identical to a whole pass's (the graph centres the map on each
// feature's mean over its pass before the weighted sums, and the sums run over the pass's
// length), which is why CPU runs keep host pooling (the RTTM pins).
TEST(SharedTrunk, ARangesRestRunsInTheShortestPassThatHoldsIt) {
  EmbeddingExtractor extractor(graph::testing::make_test_embedding_model(), "test model",
                               test_model_config());
  const std::size_t dimension = extractor.dimension();
  // 33 chunks: four whole passes of 8 and 1 more (a pass of 2); 35: 4 x 8 and 3 (a pass of 6).
  for (const auto& [seconds, tail] : {std::pair<std::size_t, std::size_t>{41, 2}, {43, 6}}) {
    const auto audio = synthetic_recording(seconds * kSampleRate + 777);
    const frames::ChunkPlan plan =
        frames::plan_chunks(static_cast<std::int64_t>(audio.size()), kSampleRate);
    const auto chunks = static_cast<std::size_t>(plan.num_chunks());
    ASSERT_EQ(chunks, seconds - 8);
    NdArray<float> segmentations({chunks, 589, 3}, 0.0f);
    for (std::size_t c = 0; c < chunks; ++c) {
      for (std::size_t f = 0; f < 589; ++f) {
        segmentations(c, f, (f / 97 + c) % 3) = 1.0f;
        if (f % 5 == 0 && f > 300) segmentations(c, f, (c + 1) % 3) = 1.0f;
      }
    }
    SharedTrunkConfig config;
    config.pooling = SharedTrunkPooling::kGraph;
    config.chunks_per_pass = 8;
    config.tail_chunks_per_pass = {2, 6};
    SharedTrunk tails(extractor, audio, plan, config);
    const NdArray<float> short_rest = embed_in_ranges(tails, segmentations, 8, dimension);
    EXPECT_EQ(tails.graph_passes_by_chunks(),
              (std::map<std::size_t, std::size_t>{{tail, 1}, {8, 4}}));
    const auto shapes =
        pooled_pass_shapes(config, kSampleRate, 10 * kSampleRate, test_model_config().fbank, 3);
    const std::size_t tail_frames = tail == 2 ? shapes[0].frames : shapes[1].frames;
    EXPECT_EQ(tails.trunk_input_frames(), 4 * shapes[2].frames + tail_frames);

    // The features computed in the graph (what an accelerator runs) in the same passes.
    SharedTrunkConfig graph_features = config;
    graph_features.features = SharedTrunkFeatures::kGraph;
    SharedTrunk graph_trunk(extractor, audio, plan, graph_features);
    const NdArray<float> graph_rest = embed_in_ranges(graph_trunk, segmentations, 8, dimension);
    EXPECT_EQ(graph_trunk.graph_passes_by_chunks(), tails.graph_passes_by_chunks());
    double worst_features = 1.0;
    for (std::size_t c = 0; c < chunks; ++c) {
      for (std::size_t s = 0; s < 3; ++s) {
        worst_features =
            std::min(worst_features, cosine(&graph_rest(c, s, 0), &short_rest(c, s, 0), dimension));
      }
    }
    EXPECT_GE(worst_features, 0.9999) << seconds << " s";

    SharedTrunkConfig whole_config = config;
    whole_config.tail_chunks_per_pass.clear();
    SharedTrunk whole(extractor, audio, plan, whole_config);
    const NdArray<float> whole_rest = embed_in_ranges(whole, segmentations, 8, dimension);
    EXPECT_EQ(whole.graph_passes_by_chunks(), (std::map<std::size_t, std::size_t>{{8, 5}}));
    EXPECT_EQ(whole.trunk_input_frames(), 5 * shapes[2].frames);

    SharedTrunkConfig host_config = config;
    host_config.pooling = SharedTrunkPooling::kHost;
    SharedTrunk host_trunk(extractor, audio, plan, host_config);
    const NdArray<float> host = embed_in_ranges(host_trunk, segmentations, 8, dimension);

    const std::size_t per_chunk = 3 * dimension;
    EXPECT_EQ(0, std::memcmp(short_rest.data(), whole_rest.data(), 32 * per_chunk * sizeof(float)))
        << "the whole passes are the same passes";
    double worst_whole = 1.0;
    double worst_host = 1.0;
    double worst_host_last = 1.0;
    std::size_t bit_identical = 0;
    for (std::size_t c = 32; c < chunks; ++c) {
      for (std::size_t s = 0; s < 3; ++s) {
        worst_whole =
            std::min(worst_whole, cosine(&short_rest(c, s, 0), &whole_rest(c, s, 0), dimension));
        double& worst = c + 1 < chunks ? worst_host : worst_host_last;
        worst = std::min(worst, cosine(&short_rest(c, s, 0), &host(c, s, 0), dimension));
        bit_identical +=
            std::memcmp(&short_rest(c, s, 0), &whole_rest(c, s, 0), dimension * sizeof(float)) == 0
                ? 1
                : 0;
      }
    }
    const std::string suffix = "_" + std::to_string(seconds) + "s";
    ::testing::Test::RecordProperty("rest_worst_cosine_to_whole_pass" + suffix,
                                    std::to_string(worst_whole));
    ::testing::Test::RecordProperty(
        "rest_pairs_bit_identical_to_whole_pass" + suffix,
        std::to_string(bit_identical) + " of " + std::to_string((chunks - 32) * 3));
    EXPECT_GT(worst_whole, 0.99999) << seconds << " s";
    // The thresholds of PoolingInTheGraphEqualsPoolingOnTheHost, which says why the last chunk's
    // is lower.
    if (chunks > 33) {
      EXPECT_GT(worst_host, 0.99999) << seconds << " s";
    }
    EXPECT_GT(worst_host_last, 0.99) << seconds << " s";
  }
}

// Each pass length runs in a session of its own (PooledSessions::kOnePerShape), the graph with
// the features in front apart from the one without: a CUDA convolution keeps the kernels of the
// last shape it ran only, so a session that ran two lengths searched its kernels again at every
// change (and outside the new-shape gate, which counts a shape once per session). The sessions
// are made once and kept for the next recording; one made ahead with the shapes
// pooled_pass_shapes names (as the Diarizer does) is the one the passes run in.
TEST(SharedTrunk, EachPassLengthRunsInASessionOfItsOwn) {
  EmbeddingExtractor extractor(graph::testing::make_test_embedding_model(), "test model",
                               test_model_config());
  SharedTrunkConfig config;
  config.pooling = SharedTrunkPooling::kGraph;
  config.features = SharedTrunkFeatures::kHost;
  config.chunks_per_pass = 8;
  config.tail_chunks_per_pass = {2, 6};
  const auto shapes =
      pooled_pass_shapes(config, kSampleRate, 10 * kSampleRate, test_model_config().fbank, 3);
  ASSERT_EQ(shapes.size(), 3u);
  // The whole pass's session made ahead; the tails' at their first pass.
  extractor.open_pooled_session(/*features_in_graph=*/false, {shapes[2].inputs()});
  ASSERT_EQ(extractor.pass_sessions().size(), 1u);
  const runtime::OnnxSession* whole_session = extractor.pass_sessions()[0].session;

  const auto embed_recording = [&](std::size_t seconds, const SharedTrunkConfig& trunk_config) {
    const auto audio = synthetic_recording(seconds * kSampleRate + 777);
    const frames::ChunkPlan plan =
        frames::plan_chunks(static_cast<std::int64_t>(audio.size()), kSampleRate);
    const auto chunks = static_cast<std::size_t>(plan.num_chunks());
    NdArray<float> segmentations({chunks, 589, 3}, 0.0f);
    for (std::size_t c = 0; c < chunks; ++c) {
      for (std::size_t f = 0; f < 589; ++f) segmentations(c, f, (f / 97 + c) % 3) = 1.0f;
    }
    SharedTrunk trunk(extractor, audio, plan, trunk_config);
    return embed_in_ranges(trunk, segmentations, 8, extractor.dimension());
  };
  // 33 chunks: four whole passes and a pass of 2.
  const NdArray<float> short_tail = embed_recording(41, config);
  auto sessions = extractor.pass_sessions();
  ASSERT_EQ(sessions.size(), 2u);
  EXPECT_EQ(sessions[0].session, whole_session) << "the session made ahead ran the whole passes";
  EXPECT_EQ(sessions[0].shapes, shapes[2].inputs());
  EXPECT_EQ(sessions[0].runs, 4u);
  EXPECT_EQ(sessions[1].shapes, shapes[0].inputs());
  EXPECT_EQ(sessions[1].runs, 1u);
  EXPECT_NE(sessions[1].session, whole_session);

  // 35 chunks: four whole passes and a pass of 6, a third session; the others are reused.
  embed_recording(43, config);
  sessions = extractor.pass_sessions();
  ASSERT_EQ(sessions.size(), 3u);
  EXPECT_EQ(sessions[0].session, whole_session);
  EXPECT_EQ(sessions[0].runs, 8u);
  EXPECT_EQ(sessions[1].runs, 1u);
  EXPECT_EQ(sessions[2].shapes, shapes[1].inputs());
  EXPECT_EQ(sessions[2].runs, 1u);
  std::set<const runtime::OnnxSession*> distinct;
  for (const auto& use : sessions) distinct.insert(use.session);
  EXPECT_EQ(distinct.size(), 3u) << "one session per pass length";

  // The rest in its short pass, in its own session, against whole passes only: the whole passes
  // bit-identical (the same model and settings), the rest within rounding.
  SharedTrunkConfig whole_only = config;
  whole_only.tail_chunks_per_pass.clear();
  const NdArray<float> whole = embed_recording(41, whole_only);
  EXPECT_EQ(extractor.pass_sessions().size(), 3u) << "whole passes run in the whole pass's session";
  const std::size_t dimension = extractor.dimension();
  EXPECT_EQ(0, std::memcmp(short_tail.data(), whole.data(), 32 * 3 * dimension * sizeof(float)));
  double worst = 1.0;
  for (std::size_t s = 0; s < 3; ++s) {
    worst = std::min(worst, cosine(&short_tail(32, s, 0), &whole(32, s, 0), dimension));
  }
  EXPECT_GT(worst, 0.99999);
  EXPECT_LT(max_abs_difference(short_tail, whole), 1e-4);

  // The features in the graph: sessions of another graph, made ahead from the shapes
  // pooled_pass_shapes names for it; the passes open none of their own.
  SharedTrunkConfig graph_features = config;
  graph_features.features = SharedTrunkFeatures::kGraph;
  std::vector<std::vector<runtime::InputShape>> sample_shapes;
  for (const PooledPassShape& shape : shapes) sample_shapes.push_back(shape.inputs_from_samples());
  extractor.open_pooled_session(/*features_in_graph=*/true, sample_shapes);
  ASSERT_EQ(extractor.pass_sessions().size(), 6u);
  const NdArray<float> from_samples = embed_recording(41, graph_features);
  sessions = extractor.pass_sessions();
  ASSERT_EQ(sessions.size(), 6u) << "the shapes made ahead are the shapes the passes run";
  EXPECT_EQ(sessions[3].runs, 1u) << "the pass of 2";
  EXPECT_EQ(sessions[4].runs, 0u) << "no pass of 6";
  EXPECT_EQ(sessions[5].runs, 4u) << "the whole passes";
  double worst_features = 1.0;
  for (std::size_t c = 0; c < 33; ++c) {
    for (std::size_t s = 0; s < 3; ++s) {
      worst_features =
          std::min(worst_features, cosine(&from_samples(c, s, 0), &short_tail(c, s, 0), dimension));
    }
  }
  EXPECT_GE(worst_features, 0.9999);
}

// Engines on one GPU share each pass length's session (runtime/session_share.h keys a session
// by the model's bytes and its settings, the pass's shapes among them); the CPU shows the
// mechanism with a share that covers CPU sessions.
TEST(SharedTrunk, EnginesShareEachPassLengthsSession) {
  const auto share =
      std::make_shared<runtime::SessionShare>(runtime::SessionShare::Scope::kEverySession);
  const std::string model = graph::testing::make_test_embedding_model();
  SharedTrunkConfig config;
  config.chunks_per_pass = 8;
  config.tail_chunks_per_pass = {2, 6};
  std::vector<std::vector<runtime::InputShape>> shapes;
  for (const PooledPassShape& shape :
       pooled_pass_shapes(config, kSampleRate, 10 * kSampleRate, test_model_config().fbank, 3)) {
    shapes.push_back(shape.inputs());
  }
  EmbeddingExtractor first(model, "test model", test_model_config(), share);
  const std::size_t before = share->size();  // the trunk
  first.open_pooled_session(/*features_in_graph=*/false, shapes);
  EXPECT_EQ(share->size(), before + 3) << "one session per pass length";
  EmbeddingExtractor second(model, "test model", test_model_config(), share);
  second.open_pooled_session(/*features_in_graph=*/false, shapes);
  EXPECT_EQ(share->size(), before + 3) << "the second engine made none of its own";
  ASSERT_EQ(second.pass_sessions().size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(second.pass_sessions()[i].session, first.pass_sessions()[i].session);
  }
}

TEST(SharedTrunk, TailSessionsNamesRoundTrip) {
  for (const TailSessions when : {TailSessions::kAtStart, TailSessions::kAtFirstPass}) {
    EXPECT_EQ(parse_tail_sessions(tail_sessions_name(when)), when);
  }
  EXPECT_THROW(parse_tail_sessions("lazy"), Error);
}

// A nine-minute file (8 min 53 s: 524 chunks at a 1 s step, 263 at 2 s) runs two whole passes
// and a quarter pass, not three whole passes: 61,104 fbank frames through the trunk for the
// recording's 53,298 instead of 80,304 at a 1 s step (60,792 instead of 79,992 at 2 s).
TEST(SharedTrunk, ANineMinuteFilesTailRunsInAQuarterPass) {
  EmbeddingExtractor extractor(graph::testing::make_test_embedding_model(), "test model",
                               test_model_config());
  const auto audio = synthetic_recording(533 * kSampleRate);
  for (const auto& [step, whole, quarter, frames] :
       {std::tuple<int, std::size_t, std::size_t, std::size_t>{1, 256, 64, 2 * 26768 + 7568},
        {2, 128, 32, 2 * 26664 + 7464}}) {
    const frames::ChunkPlan plan =
        frames::plan_chunks(static_cast<std::int64_t>(audio.size()), kSampleRate, 10.0, step);
    const auto chunks = static_cast<std::size_t>(plan.num_chunks());
    EXPECT_EQ(chunks, step == 1 ? 524u : 263u);
    NdArray<float> segmentations({chunks, 589, 3}, 0.0f);
    for (std::size_t c = 0; c < chunks; ++c) {
      for (std::size_t f = 0; f < 589; ++f) segmentations(c, f, (f / 131 + c) % 3) = 1.0f;
    }
    SharedTrunkConfig config;
    config.pooling = SharedTrunkPooling::kGraph;
    SharedTrunk trunk(extractor, audio, plan, config);
    embed_in_ranges(trunk, segmentations, whole, extractor.dimension());
    EXPECT_EQ(trunk.graph_passes_by_chunks(),
              (std::map<std::size_t, std::size_t>{{quarter, 1}, {whole, 2}}))
        << "step " << step;
    EXPECT_EQ(trunk.trunk_input_frames(), frames) << "step " << step;
    // The padded recording: to the last chunk's end (534 s at 2 s, whose last chunk starts at
    // 524 s).
    EXPECT_EQ(trunk.total_frames(), step == 1 ? 53298u : 53398u);
  }
}

// What a static-shape provider gets with a tail, forced on the CPU: a session for each pass
// shape the run uses, opened from the compiled-graph cache with the inputs pooled_pass_shapes
// names, whole pass first, then the tail's, with the embeddings of one session for all shapes.
TEST(SharedTrunk, ATailPassOpensTheShapePooledPassShapesNames) {
  const auto audio = synthetic_recording(24 * kSampleRate + 321);
  const frames::ChunkPlan plan =
      frames::plan_chunks(static_cast<std::int64_t>(audio.size()), kSampleRate);
  const auto chunks = static_cast<std::size_t>(plan.num_chunks());
  ASSERT_EQ(chunks, 16u);  // three passes of 5 and one chunk
  NdArray<float> segmentations({chunks, 589, 3}, 0.0f);
  for (std::size_t c = 0; c < chunks; ++c) {
    for (std::size_t f = 0; f < 589; ++f) segmentations(c, f, (f / 131 + c) % 3) = 1.0f;
  }
  SharedTrunkConfig config;
  config.pooling = SharedTrunkPooling::kGraph;
  config.chunks_per_pass = 5;
  config.tail_chunks_per_pass = {2};
  const auto cache_root = std::filesystem::temp_directory_path() /
                          ("parley_shared_trunk_tail_shapes_" + std::to_string(::getpid()));
  std::filesystem::remove_all(cache_root);
  EmbeddingConfig per_shape_config = test_model_config();
  per_shape_config.batch_buckets = runtime::Buckets::powers_of_two(per_shape_config.batch_size);
  per_shape_config.compile_cache_root = cache_root;
  EmbeddingExtractor per_shape(graph::testing::make_test_embedding_model(), "test model",
                               per_shape_config);
  EmbeddingExtractor one_session(graph::testing::make_test_embedding_model(), "test model",
                                 test_model_config());
  SharedTrunk per_shape_trunk(per_shape, audio, plan, config);
  SharedTrunk one_session_trunk(one_session, audio, plan, config);
  const NdArray<float> actual =
      embed_in_ranges(per_shape_trunk, segmentations, 5, per_shape.dimension());
  const NdArray<float> expected =
      embed_in_ranges(one_session_trunk, segmentations, 5, one_session.dimension());
  std::filesystem::remove_all(cache_root);
  EXPECT_LT(max_abs_difference(actual, expected), 1e-5);
  const auto shapes = pooled_pass_shapes(config, plan.step_samples, plan.window_samples,
                                         test_model_config().fbank, 3);
  ASSERT_EQ(shapes.size(), 2u);
  EXPECT_EQ(per_shape_trunk.graph_passes_by_chunks(),
            (std::map<std::size_t, std::size_t>{{2, 1}, {5, 3}}));
  EXPECT_EQ(per_shape.opened_shapes(), (std::vector<std::vector<runtime::InputShape>>{
                                           shapes[1].inputs(), shapes[0].inputs()}));
}

TEST(SharedTrunk, ChecksTheTrunksReceptiveField) {
  using Kind = graph::TimeReceptiveField::Kind;
  SharedTrunkConfig config;  // margins of 128 fbank frames, time stride 8
  graph::TimeReceptiveField field;
  field.kind = Kind::kLocal;
  field.stride = 8;
  field.before = 112;
  field.after = 128;
  EXPECT_NO_THROW(check_receptive_field(field, config));
  field.after = 129;
  EXPECT_THROW(check_receptive_field(field, config), Error);
  field.after = 112;
  field.stride = 4;
  EXPECT_THROW(check_receptive_field(field, config), Error);
  field.kind = Kind::kGlobal;
  field.reason = "GlobalAveragePool 'pool' mixes the whole time axis";
  try {
    check_receptive_field(field, config);
    FAIL() << "a global trunk must be refused";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("GlobalAveragePool"), std::string::npos);
    EXPECT_NE(std::string(error.what()).find("embedding_mode exact"), std::string::npos);
  }
  field.kind = Kind::kUnknown;
  EXPECT_NO_THROW(check_receptive_field(field, config));
}

TEST(SharedTrunk, RefusesStepsOffTheFbankGrid) {
  const auto audio = synthetic_recording(12 * kSampleRate);
  const frames::ChunkPlan plan =
      frames::plan_chunks(static_cast<std::int64_t>(audio.size()), kSampleRate, 10.0, 1.005);
  EmbeddingExtractor extractor(graph::testing::make_test_embedding_model(), "test model",
                               test_model_config());
  EXPECT_THROW(SharedTrunk(extractor, audio, plan, SharedTrunkConfig{}), Error);
  EXPECT_EQ(parse_embedding_mode("shared"), EmbeddingMode::kShared);
  EXPECT_THROW(parse_embedding_mode("fast"), Error);
}

}  // namespace
}  // namespace parley::stages
