// `parley warm-cache`: flags into a pipeline::WarmCacheConfig, and what the procedure
// (pipeline/warm_cache.h: which graphs and shapes, the compiling, the cost model) reports,
// printed.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/diarization_options.h"
#include "cli/provider_options.h"
#include "core/error.h"
#include "pipeline/option_values.h"
#include "pipeline/warm_cache.h"
#include "runtime/compile_cache.h"
#include "runtime/device_memory.h"
#include "runtime/provider_discovery.h"

namespace parley::cli {
namespace {
namespace fs = std::filesystem;

struct WarmCacheArguments {
  std::string provider;
  std::vector<std::string> provider_options;
  std::string models;
  std::string batch_buckets;
  std::vector<std::string> dims;
  std::string cache_dir;
  bool measure = true;
  std::vector<double> steps = {1.0};
};

pipeline::WarmCacheConfig warm_cache_config(const WarmCacheArguments& arguments) {
  ProviderArguments provider_arguments;
  provider_arguments.provider = arguments.provider;
  provider_arguments.provider_options = arguments.provider_options;
  pipeline::WarmCacheConfig config;
  // Where the models run is the engine's decision, as for every face.
  config.placement = pipeline::provider_placement(provider_values(provider_arguments));
  if (!arguments.models.empty()) config.models_dir = fs::path(arguments.models);
  if (!arguments.batch_buckets.empty()) {
    config.batch_buckets = runtime::Buckets::parse(arguments.batch_buckets);
  }
  for (const auto& dim : arguments.dims) {
    try {
      pipeline::add_warm_cache_dimension(config, dim);
    } catch (const Error&) {
      fail("--dim {}: expected NAME=SIZES (e.g. --dim frames=200,998)", dim);
    }
  }
  config.cache_dir = arguments.cache_dir;
  config.measure = arguments.measure;
  config.steps = arguments.steps;
  return config;
}

class PrintedWarmCache : public pipeline::WarmCacheObserver {
 public:
  void started(runtime::ProviderId provider, const std::string& reason,
               const fs::path& cache_root) override {
    fmt::print("warming {} ({}) into {}\n", runtime::provider_name(provider), reason,
               cache_root.string());
  }
  void models_found(const pipeline::WarmCacheModels& found) override {
    fmt::print("models from {} ({})\n", found.dir.string(), found.origin);
  }
  void model_planned(const pipeline::WarmModelPlan& plan) override {
    const std::string name = plan.source.filename().string();
    if (plan.embedding) {
      fmt::print("{}: an embedding model; compiling what the pipeline loads: its {}{}\n", name,
                 plan.targets.front().label,
                 plan.targets.size() > 1 ? " and its " + plan.targets[1].label : std::string());
      return;
    }
    if (!plan.rewrite.empty()) fmt::print("{}: as accelerators get it: {}\n", name, plan.rewrite);
    if (!plan.skipped.empty()) fmt::print("{}: skipped: {}\n", name, plan.skipped);
  }
  void target_started(const pipeline::WarmTarget& target, runtime::ProviderId provider) override {
    fmt::print("{} ({} shapes on {})\n", target.model.filename().string(), target.shapes.size(),
               runtime::traits(provider).name);
    provider_ = provider;
  }
  void shape_done(const pipeline::WarmTarget&, const pipeline::WarmShapeOutcome& outcome) override {
    using Kind = pipeline::WarmShapeOutcome::Kind;
    for (const auto& note : outcome.notes) fmt::print("  note: {}\n", note);
    std::string what;
    switch (outcome.kind) {
      case Kind::kReady:
        what = fmt::format(
            "session ready in {:.2f} s (nothing to keep: {} compiles nothing ahead of time)",
            outcome.seconds, runtime::traits(provider_).name);
        break;
      case Kind::kCached:
        what = fmt::format("cached, loaded in {:.2f} s, {}", outcome.seconds,
                           runtime::format_bytes(outcome.cache_bytes));
        break;
      case Kind::kCompiled:
        what = outcome.kept ? fmt::format("compiled in {:.2f} s, {}", outcome.seconds,
                                          runtime::format_bytes(outcome.cache_bytes))
                            : fmt::format("compiled in {:.2f} s, not cached", outcome.seconds);
        break;
      case Kind::kFailed:
        what = "failed: " + outcome.error;
        break;
    }
    fmt::print("  {:<40} {}\n", runtime::shapes_to_string(outcome.shapes), what);
  }
  void costs_measured(const pipeline::WarmTarget&, runtime::ProviderId provider,
                      const runtime::CostConstants& constants) override {
    fmt::print("  cost model: CPU {:.4f} s/item; {} {:.4f} s/item + {:.4f} s/call, load {:.2f} s\n",
               constants.cpu_seconds_per_item, runtime::traits(provider).name,
               constants.gpu_seconds_per_item, constants.gpu_seconds_per_call,
               constants.gpu_session_load_seconds);
  }

 private:
  runtime::ProviderId provider_ = runtime::ProviderId::kCpu;
};

void run_warm_cache(const WarmCacheArguments& arguments) {
  PrintedWarmCache printed;
  const pipeline::WarmCacheSummary summary =
      pipeline::warm_cache(warm_cache_config(arguments), printed);
  if (summary.nothing_to_compile) {
    fmt::print(
        "{}: nothing to compile: the CPU provider runs every input shape directly and keeps no "
        "compiled graphs. Compiled graphs are cached for migraphx (amdgpu), tensorrt, coreml and "
        "openvino; `parley providers` shows which of them this machine can use.\n",
        summary.automatic ? "auto chose cpu" : "cpu");
    return;
  }
  if (!summary.costs_file.empty()) {
    fmt::print("cost-model constants: {}\n", summary.costs_file.string());
  }
  fmt::print("{} shapes: {} compiled, {} already cached, {} failed ({:.1f} s); {} models skipped\n",
             summary.shapes, summary.compiled, summary.cached, summary.failed, summary.seconds,
             summary.skipped_models);
  if (summary.failed > 0) {
    fail("{} of {} shapes could not be prepared on {} (see above)", summary.failed, summary.shapes,
         runtime::provider_name(summary.provider));
  }
}

}  // namespace

void add_warm_cache_command(CLI::App& app) {
  auto arguments = std::make_shared<WarmCacheArguments>();
  auto* command = app.add_subcommand(
      "warm-cache",
      "Compile every model for every bucket shape ahead of time on a provider that compiles per "
      "shape (for an embedding model: its trunk at the batch buckets and its pooled graph at the "
      "shared mode's pass, what the pipeline loads), and measure the cost-model constants "
      "(docs/providers.md)");
  command
      ->add_option("--provider", arguments->provider,
                   "Execution provider: " + runtime::valid_provider_names())
      ->required();
  command->add_option("--provider-option", arguments->provider_options,
                      "key=value passed to the execution provider, repeatable");
  command->add_option("--models", arguments->models,
                      "Folder of .onnx models (default: the first of $PARLEY_MODELS and "
                      "${XDG_CACHE_HOME:-~/.cache}/parley/models that has any)");
  command
      ->add_option("--step", arguments->steps,
                   "Chunk steps in seconds whose shared-mode embedding pass is compiled, "
                   "repeatable (default 1; `--step 1 --step 2` for both)")
      ->check(number_above(0));
  command->add_option("--batch-buckets", arguments->batch_buckets,
                      "Batch sizes to compile (default 1,2,4,8,16,32)");
  command->add_option("--dim", arguments->dims,
                      "Sizes of another dynamic dimension, NAME=SIZES, by symbol or input.axis "
                      "(e.g. --dim frames=998), repeatable; defaults: samples=160000, T=998, "
                      "frames=998 (embedding models get the pipeline's own shapes)");
  command->add_option("--cache-dir", arguments->cache_dir,
                      "Cache folder (default: $PARLEY_COMPILE_CACHE, else "
                      "${XDG_CACHE_HOME:-~/.cache}/parley/compiled)");
  command->add_flag("!--no-measure", arguments->measure,
                    "Skip timing the CPU and the GPU for the cost model");
  command->callback([arguments] { run_warm_cache(*arguments); });
}

}  // namespace parley::cli
