#pragma once
// The graphs the embedding stage opens on a provider that compiles one graph per input shape
// (MIGraphX, TensorRT): the trunk cut before the statistics pooling (exact mode, and the shared
// mode pooled on the host) at batch buckets, and the trunk with the pooling inside the graph
// (the shared mode on an accelerator, graph/pooled_trunk_graph.h) at its few pass shapes. Both
// are kept as content-addressed files under <compile cache root>/models, because the
// compiled-graph cache is keyed by a model file's digest. The EmbeddingExtractor opens them,
// `parley warm-cache` compiles them ahead of time and the placement looks them up in the cache,
// all through these functions, so the three agree on the bytes and the shapes.
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "graph/onnx_graph.h"
#include "runtime/shape_plan.h"
#include "stages/fbank.h"
#include "stages/shared_trunk.h"

namespace parley::stages {

struct EmbeddingGraph {
  std::string label;            // "trunk" or "pooled trunk", for messages
  std::filesystem::path model;  // the file, content-addressed
  std::string sha256;           // of the file: what the compiled-graph cache is keyed by
  std::vector<runtime::DeclaredInput> inputs;  // as the file declares them
};

// Where derived models are kept for the compiled-graph cache at `cache_root`.
std::filesystem::path derived_models_directory(const std::filesystem::path& cache_root);

// The trunk of `split` (of the model `model_name`) as a file in `directory`.
EmbeddingGraph trunk_graph(const graph::StatisticsPoolingSplit& split,
                           const std::string& model_name, const std::filesystem::path& directory);
// graph::build_pooled_trunk_model of `split` as a file in `directory`.
EmbeddingGraph pooled_trunk_graph(const graph::StatisticsPoolingSplit& split,
                                  const std::string& model_name,
                                  const std::filesystem::path& directory, double variance_epsilon);

// The trunk's input shape for `batch` inputs of `frames` fbank frames of `bins` bins.
std::vector<runtime::InputShape> trunk_input_shapes(const EmbeddingGraph& trunk, std::size_t batch,
                                                    std::size_t frames, std::size_t bins);

// The pipeline's settings that decide which graphs and shapes it loads.
struct EmbeddingGraphSettings {
  // Trunk calls (exact mode) are padded to these batch sizes: powers of two up to the
  // embedding batch size.
  runtime::Buckets batch_buckets = runtime::Buckets::powers_of_two(32);
  SharedTrunkConfig shared;
  double step_seconds = 1.0;
  double window_seconds = 10.0;  // segmentation-3.0's chunks
  std::size_t speakers = 3;      // segmentation-3.0's local speakers per chunk
  FbankConfig fbank;
  double variance_epsilon = 0.0;  // EmbeddingConfig's (pyannote's StatsPool adds nothing)
};

// Everything the embedding stage may load for one embedding model on a static-shape provider.
struct EmbeddingCompileTargets {
  EmbeddingGraph trunk;
  std::size_t chunk_frames = 0;                                // fbank frames of one chunk
  std::vector<std::vector<runtime::InputShape>> trunk_shapes;  // each bucket x one chunk
  // Absent when the model cannot pool in the graph (statistics not over its last axis).
  std::optional<EmbeddingGraph> pooled;
  // The shared mode's passes (stages::pooled_pass_shapes at the settings' step): the chunks each
  // holds, shortest first, the whole pass last, and each one's inputs in that order.
  std::vector<std::size_t> pooled_pass_chunks;
  std::vector<std::vector<runtime::InputShape>> pooled_shapes;
};

// The targets of the embedding model file `model`, written under
// derived_models_directory(cache_root). Nullopt when graph::split_before_statistics_pooling
// refuses the model (it is not a speaker-embedding model); other failures throw.
std::optional<EmbeddingCompileTargets> embedding_compile_targets(
    const std::filesystem::path& model, const std::filesystem::path& cache_root,
    const EmbeddingGraphSettings& settings = {});

}  // namespace parley::stages
