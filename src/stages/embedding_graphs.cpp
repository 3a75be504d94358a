#include "stages/embedding_graphs.h"

#include <cmath>

#include "core/error.h"
#include "graph/content_addressed_model.h"
#include "graph/onnx_inspect.h"
#include "graph/pooled_trunk_graph.h"

namespace parley::stages {
namespace {

EmbeddingGraph graph_file(std::string label, const std::string& bytes, const std::string& stem,
                          const std::string& model_name, const std::filesystem::path& directory) {
  EmbeddingGraph graph;
  graph.label = std::move(label);
  auto file = graph::write_content_addressed_model(bytes, stem, directory);
  graph.model = std::move(file.path);
  graph.sha256 = std::move(file.sha256);
  graph.inputs = graph::declared_inputs(bytes, model_name);
  return graph;
}

std::string stem_of(const std::string& model_name) {
  const std::string stem = std::filesystem::path(model_name).stem().string();
  return stem.empty() ? std::string("embedding") : stem;
}

std::int64_t samples_of(double seconds, const FbankConfig& fbank) {
  return static_cast<std::int64_t>(std::llround(seconds * fbank.sample_rate));
}

}  // namespace

std::filesystem::path derived_models_directory(const std::filesystem::path& cache_root) {
  return cache_root / "models";
}

EmbeddingGraph trunk_graph(const graph::StatisticsPoolingSplit& split,
                           const std::string& model_name, const std::filesystem::path& directory) {
  return graph_file("trunk", split.trunk_model, stem_of(model_name) + "-trunk",
                    model_name + " (trunk before pooling)", directory);
}

EmbeddingGraph pooled_trunk_graph(const graph::StatisticsPoolingSplit& split,
                                  const std::string& model_name,
                                  const std::filesystem::path& directory, double variance_epsilon) {
  return graph_file(
      "pooled trunk", graph::build_pooled_trunk_model(split, model_name, variance_epsilon),
      stem_of(model_name) + "-pooled", model_name + " (trunk with pooling)", directory);
}

std::vector<runtime::InputShape> trunk_input_shapes(const EmbeddingGraph& trunk, std::size_t batch,
                                                    std::size_t frames, std::size_t bins) {
  if (trunk.inputs.size() != 1) {
    fail("{}: the embedding trunk has {} inputs, expected the fbank features only",
         trunk.model.string(), trunk.inputs.size());
  }
  return {{trunk.inputs.front().name,
           {static_cast<std::int64_t>(batch), static_cast<std::int64_t>(frames),
            static_cast<std::int64_t>(bins)}}};
}

std::optional<EmbeddingCompileTargets> embedding_compile_targets(
    const std::filesystem::path& model, const std::filesystem::path& cache_root,
    const EmbeddingGraphSettings& settings) {
  const std::string bytes = graph::read_model_bytes(model);
  graph::StatisticsPoolingSplit split;
  try {
    split = graph::split_before_statistics_pooling(bytes, model.string());
  } catch (const Error&) {
    return std::nullopt;  // not an embedding model: the caller treats the file as it is
  }
  const auto directory = derived_models_directory(cache_root);
  EmbeddingCompileTargets targets;
  targets.trunk = trunk_graph(split, model.string(), directory);
  const std::int64_t window_samples = samples_of(settings.window_seconds, settings.fbank);
  targets.chunk_frames = Fbank(settings.fbank).num_frames(static_cast<std::size_t>(window_samples));
  for (const std::size_t batch : settings.batch_buckets.sizes()) {
    targets.trunk_shapes.push_back(trunk_input_shapes(targets.trunk, batch, targets.chunk_frames,
                                                      settings.fbank.num_mel_bins));
  }
  if (split.time_axis == -1) {
    targets.pooled =
        pooled_trunk_graph(split, model.string(), directory, settings.variance_epsilon);
    for (const PooledPassShape& pass :
         pooled_pass_shapes(settings.shared, samples_of(settings.step_seconds, settings.fbank),
                            window_samples, settings.fbank, settings.speakers)) {
      targets.pooled_pass_chunks.push_back(pass.chunks);
      targets.pooled_shapes.push_back(pass.inputs());
    }
  }
  return targets;
}

}  // namespace parley::stages
