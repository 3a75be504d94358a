#pragma once
// Preparing a provider that compiles one graph per input shape (MIGraphX, TensorRT, CoreML,
// OpenVINO) ahead of a run: every graph the pipeline will load compiled at every shape it will
// load it at, into the compiled-graph cache (runtime/compile_cache.h), and the cost model's
// constants measured (runtime/cost_model.h), which the provider placement weighs. Which graphs
// and shapes is decided here, with the pipeline's own rules, so that the cache holds what a run
// opens and nothing else:
//   - an embedding model (stages/embedding_graphs.h): its trunk at the batch buckets and chunks of
//     the model's frames (exact mode, and the shared mode pooled on the host), and its trunk with
//     the pooling in the graph at the shared mode's pass of each chunk step; never the file
//     itself, which no run loads on such a provider;
//   - any other model: the file as accelerators get it (graph/accelerator_rewrite.h), at every
//     combination of the batch buckets and the sizes of its other dynamic dimensions
//     (runtime::enumerate_bucket_shapes; segmentation-3.0's 10 s chunks by default).
// `parley warm-cache` is its face: it translates flags into a WarmCacheConfig and prints what
// the observer is told.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pipeline/network_placement.h"
#include "runtime/cost_model.h"
#include "runtime/provider.h"
#include "runtime/shape_plan.h"

namespace parley::pipeline {

struct WarmCacheConfig {
  // The provider to compile for and its options, as every face routes them
  // (pipeline::provider_placement of the option values). The CPU compiles nothing.
  ProviderPlacement placement;
  // The folder searched first for .onnx models (models::default_search_places: then
  // $PARLEY_MODELS, the per-user cache, parley's own); the first folder that holds any is used.
  std::optional<std::filesystem::path> models_dir;
  // Batch sizes compiled; unset: runtime::default_batch_buckets().
  std::optional<runtime::Buckets> batch_buckets;
  // Sizes of other dynamic dimensions, by symbol ("frames") or "input.axis" ("fbank.1"), over
  // the defaults (default_warm_cache_dimensions).
  std::map<std::string, runtime::Buckets> dimensions;
  // The compiled-graph cache; empty: runtime::CompileCache::root_or_default.
  std::filesystem::path cache_dir;
  // Time the CPU and the provider on the compiled shapes and store the cost-model constants.
  bool measure = true;
  // Chunk steps (seconds) whose shared-mode pass is compiled: the pass's length depends on it.
  std::vector<double> steps = {1.0};

  // Fails, naming the field: no steps, a step not above 0, a dimension with no name.
  void validate() const;
};

// parley's own models run on 10 s chunks at 16 kHz: 160000 samples into segmentation-3.0 and 998
// fbank frames into the embedding model ("samples", "T" and "frames").
std::map<std::string, runtime::Buckets> default_warm_cache_dimensions();

// `text` ("NAME=SIZES", e.g. "frames=200,998") as an entry of config.dimensions, replacing one of
// the same name. Fails, naming the field dimensions, on a text of another form.
void add_warm_cache_dimension(WarmCacheConfig& config, std::string_view text);

// The shapes `config` asks for: its batch buckets, and its dimensions over the defaults.
runtime::ShapeProfile warm_cache_profile(const WarmCacheConfig& config);

// One graph to compile, at each of `shapes`.
struct WarmTarget {
  std::string label;            // "" for a model file itself, "trunk", "pooled trunk"
  std::filesystem::path model;  // the file compiled (content-addressed under the cache)
  std::string sha256;           // what the compiled-graph cache is keyed by
  std::vector<runtime::DeclaredInput> inputs;
  std::vector<std::vector<runtime::InputShape>> shapes;
  // Cost constants are per item and per call of batches: measured for graphs run in batches,
  // not for a pooled trunk's pass (the placement takes a compiled pass as it is).
  bool measure_costs = true;
};

// What is compiled of one model file found.
struct WarmModelPlan {
  std::filesystem::path source;
  bool embedding = false;  // an embedding model: its trunk graphs, not the file
  std::string rewrite;     // what accelerators get changed in the file ("" when nothing)
  std::string skipped;     // why nothing of it is compiled ("" when something is)
  std::vector<WarmTarget> targets;
};

// The targets of the model file `model` for `profile` and `steps` (the derived files written
// under `cache_root`, as the pipeline writes them). A model whose inputs cannot be fed (not
// float32, a dynamic dimension with no sizes) is skipped, saying why.
WarmModelPlan plan_warm_model(const std::filesystem::path& model,
                              const runtime::ShapeProfile& profile,
                              const std::vector<double>& steps,
                              const std::filesystem::path& cache_root);

// The .onnx models of the first folder, in the model search order from `models_dir`, that holds
// any, sorted by name. Fails, naming the folders searched, when none does.
struct WarmCacheModels {
  std::filesystem::path dir;
  std::string origin;  // why that folder (models::SearchPlace::origin)
  std::vector<std::filesystem::path> models;
};
WarmCacheModels find_warm_cache_models(const std::optional<std::filesystem::path>& models_dir);

// How one shape went.
struct WarmShapeOutcome {
  enum class Kind {
    kReady,     // a session made; the provider keeps nothing compiled ahead of time
    kCached,    // loaded from the cache
    kCompiled,  // compiled now (`kept`: and published to the cache)
    kFailed,
  };
  std::vector<runtime::InputShape> shapes;
  Kind kind = Kind::kFailed;
  bool kept = false;
  double seconds = 0.0;
  std::uintmax_t cache_bytes = 0;
  std::string error;               // kFailed: why
  std::vector<std::string> notes;  // rebuilt entries and the like (runtime::CompiledSession)
};

// What warm_cache reports as it goes (each may be left as it is: nothing is reported).
class WarmCacheObserver {
 public:
  virtual ~WarmCacheObserver() = default;
  // The provider chosen (not the CPU), why it is available, and the cache's folder.
  virtual void started(runtime::ProviderId /*provider*/, const std::string& /*reason*/,
                       const std::filesystem::path& /*cache_root*/) {}
  virtual void models_found(const WarmCacheModels& /*found*/) {}
  // Before a model's targets are compiled (or it is skipped: plan.skipped).
  virtual void model_planned(const WarmModelPlan& /*plan*/) {}
  virtual void target_started(const WarmTarget& /*target*/, runtime::ProviderId /*provider*/) {}
  virtual void shape_done(const WarmTarget& /*target*/, const WarmShapeOutcome& /*outcome*/) {}
  virtual void costs_measured(const WarmTarget& /*target*/, runtime::ProviderId /*provider*/,
                              const runtime::CostConstants& /*constants*/) {}
};

struct WarmCacheSummary {
  runtime::ProviderId provider = runtime::ProviderId::kCpu;
  // The CPU was chosen (named, or `auto` found no accelerator): nothing was compiled.
  bool nothing_to_compile = false;
  bool automatic = false;  // the provider was chosen by `auto`
  std::size_t shapes = 0;
  std::size_t compiled = 0;
  std::size_t cached = 0;
  std::size_t failed = 0;
  std::size_t skipped_models = 0;
  double seconds = 0.0;              // opening and compiling the shapes
  std::filesystem::path costs_file;  // where the constants were stored (empty: not measured)
};

// Compiles the targets of every model found (find_warm_cache_models) on the provider
// `config.placement` chooses, telling `observer` as it goes, and stores the cost constants when
// `config.measure`. A shape that cannot be compiled is counted failed and the others go on. On
// the CPU nothing is compiled, nothing is searched and no cache folder is made. Fails on a
// configuration validate() refuses, a provider named but unavailable, or no models found.
WarmCacheSummary warm_cache(const WarmCacheConfig& config, WarmCacheObserver& observer);

}  // namespace parley::pipeline
