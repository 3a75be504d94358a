#pragma once
// Where the pipeline's two networks run. `--provider` (and --force-gpu / --force-cpu) apply to
// both; `--segmentation-provider` / `--embedding-provider` override one. Each model gets its own
// decision from runtime::place_model (resolving auto, compiled buckets in the cache for
// static-shape providers, the cost model, the free device memory: a smaller batch or the CPU,
// said once), and the decision becomes that model's session settings. Building the settings
// touches no session, so the whole decision is tested on the CPU with synthetic providers.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "runtime/compile_cache.h"
#include "runtime/cost_model.h"
#include "runtime/device_memory.h"
#include "runtime/notice.h"
#include "runtime/placement.h"
#include "runtime/provider.h"
#include "runtime/provider_discovery.h"
#include "stages/embedding.h"
#include "stages/segmentation.h"

namespace parley::pipeline {

struct DiarizationModels;
struct DiarizationConfig;

// What the user asked for (the CLI's provider flags).
struct ProviderPlacement {
  runtime::ProviderChoice choice;  // --provider; auto by default
  runtime::ForceMode force = runtime::ForceMode::kNone;
  runtime::ProviderOptions options;  // --provider-option, for whichever accelerator is used
  std::optional<runtime::ProviderChoice> segmentation_choice;  // --segmentation-provider
  std::optional<runtime::ProviderChoice> embedding_choice;     // --embedding-provider
  // Audio length the cost model weighs (the job is not known when the models load); the CLI
  // passes a single input's duration when the container tells it. A run into an output folder
  // keeps this default (corpus::fingerprinted_placement).
  double expected_audio_seconds = 3600.0;
  // The longest recording the run knows of (0: none known): the step is checked against its
  // memory need instead of expected_audio_seconds'. The cost model does not weigh it.
  double longest_audio_seconds = 0.0;
  // Compiled graphs and cost-model constants; empty: runtime::CompileCache::default_root().
  std::filesystem::path compile_cache_root;
  // Chunks per segmentation call on an accelerator (the model's batch is made dynamic there;
  // at one chunk per call a GPU is slower than one CPU core: docs/providers.md, "In the
  // pipeline").
  std::size_t accelerator_segmentation_batch_size = 128;

  // Fails, in the configuration's words, on a request no provider can honour: provider_options
  // where every model runs on the CPU (provider cpu, or force cpu), which has no such options.
  void validate() const;
};

// Where this process's facts come from; tests pass synthetic statuses and a temporary cache.
struct PlacementEnvironment {
  const std::vector<runtime::ProviderStatus>* statuses = nullptr;  // null: provider_statuses()
  runtime::OnceNotices* notices = nullptr;                         // null: runtime::notices()
  // Free memory of the accelerator; null: asked of the device (runtime/device_memory.h).
  const std::optional<runtime::DeviceMemory>* device_memory = nullptr;
};

struct ModelSessionPlan {
  stages::SegmentationConfig segmentation;
  stages::EmbeddingConfig embedding;
  // Set when the pipeline routed the models (DiarizationConfig::placement); their `reason` is what
  // the log says about each model.
  std::optional<runtime::PlacementDecision> segmentation_placement;
  std::optional<runtime::PlacementDecision> embedding_placement;
};

// The segmentation and embedding settings for `config`: with config.placement set, each model is
// routed (may throw parley::Error for a strict request that cannot be met, naming the flag);
// without it, config's explicit segmentation_provider / embedding_provider are used as they are.
ModelSessionPlan plan_model_sessions(const DiarizationModels& models,
                                     const DiarizationConfig& config,
                                     const PlacementEnvironment& environment = {});

// Fails, saying the step that would fit, when a recording of `audio_seconds` makes more chunks at
// config.step_seconds than this machine's memory keeps until clustering ends (docs/corpus.md,
// "Memory"). Nothing is checked for 0 seconds or a machine that does not say its memory.
void check_step_fits(const DiarizationConfig& config, double audio_seconds);

}  // namespace parley::pipeline
