#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.h"
#include "cli/diarization_options.h"
#include "cli/provider_options.h"
#include "core/error.h"
#include "core/sha256.h"
#include "core/stage_timer.h"
#include "graph/accelerator_rewrite.h"
#include "models/model_locator.h"
#include "pipeline/network_placement.h"
#include "pipeline/option_values.h"
#include "runtime/compile_cache.h"
#include "runtime/compiled_session.h"
#include "runtime/cost_model.h"
#include "runtime/device_memory.h"
#include "runtime/provider_discovery.h"
#include "stages/embedding_graphs.h"

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
  // Chunk steps (seconds) whose shared-mode pass shape is compiled: the pass length depends on it.
  std::vector<double> steps = {1.0};
};

std::vector<fs::path> onnx_files(const fs::path& folder) {
  std::vector<fs::path> models;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    if (entry.is_regular_file() && entry.path().extension() == ".onnx")
      models.push_back(entry.path());
  }
  std::sort(models.begin(), models.end());
  return models;
}

// The models of the first folder in parley's model search order (--models, $PARLEY_MODELS, the
// per-user cache, beside the executable) that has any.
std::vector<fs::path> onnx_models(const std::string& flag) {
  std::optional<fs::path> models_flag;
  if (!flag.empty()) models_flag = fs::path(flag);
  std::vector<std::string> searched;
  for (const auto& place : models::default_search_places(models_flag)) {
    auto models = onnx_files(place.dir);
    if (!models.empty()) {
      fmt::print("models from {} ({})\n", place.dir.string(), place.origin);
      return models;
    }
    searched.push_back(fmt::format("{} ({})", place.dir.string(), place.origin));
  }
  fail("no .onnx models in {} (pass --models DIR, or run `parley models fetch`)",
       searched.empty() ? std::string("any folder: HOME is unset")
                        : fmt::format("{}", fmt::join(searched, ", ")));
}

runtime::ShapeProfile shape_profile(const WarmCacheArguments& arguments) {
  runtime::ShapeProfile profile;
  // parley's own models run on 10 s chunks at 16 kHz: 160000 samples into segmentation-3.0 and
  // 998 fbank frames into the embedding model. --dim overrides these.
  profile.dim_buckets.insert_or_assign("samples", runtime::Buckets({160000}));
  profile.dim_buckets.insert_or_assign("T", runtime::Buckets({998}));
  profile.dim_buckets.insert_or_assign("frames", runtime::Buckets({998}));
  if (!arguments.batch_buckets.empty())
    profile.batch = runtime::Buckets::parse(arguments.batch_buckets);
  for (const auto& dim : arguments.dims) {
    const auto equals = dim.find('=');
    if (equals == std::string::npos || equals == 0) {
      fail("--dim {}: expected NAME=SIZES (e.g. --dim frames=200,998)", dim);
    }
    profile.dim_buckets.insert_or_assign(dim.substr(0, equals),
                                         runtime::Buckets::parse(dim.substr(equals + 1)));
  }
  return profile;
}

std::vector<runtime::DeclaredInput> declared_inputs(const runtime::OnnxSession& session) {
  std::vector<runtime::DeclaredInput> inputs;
  for (const auto& input : session.inputs())
    inputs.push_back({input.name, input.shape, input.symbols});
  return inputs;
}

double time_run(runtime::OnnxSession& session, const std::vector<runtime::InputShape>& shapes) {
  const auto start = std::chrono::steady_clock::now();
  runtime::run_on_zeros(session, shapes);
  return seconds_since(start);
}

std::size_t batch_of(const std::vector<runtime::InputShape>& shapes) {
  return shapes.empty() || shapes[0].dims.empty() ? 1 : static_cast<std::size_t>(shapes[0].dims[0]);
}

struct Totals {
  std::size_t shapes = 0;
  std::size_t compiled = 0;
  std::size_t cached = 0;
  std::size_t failed = 0;
  std::size_t skipped = 0;  // models
  double seconds = 0.0;
};

// Compiles `model` (sha256 `sha`, inputs `inputs`) for each of `all_shapes`, reporting time and
// size per shape; with `costs`, times each shape and stores the cost-model constants.
void warm_shapes(const fs::path& model, const std::string& sha,
                 const std::vector<runtime::DeclaredInput>& inputs,
                 const std::vector<std::vector<runtime::InputShape>>& all_shapes,
                 const runtime::ProviderStatus& status,
                 const pipeline::ProviderPlacement& selection, runtime::CompileCache& cache,
                 runtime::CostModelStore* costs, Totals& totals) {
  const auto& traits = runtime::traits(status.id);
  fmt::print("{} ({} shapes on {})\n", model.filename().string(), all_shapes.size(), traits.name);

  std::vector<runtime::TimingSample> gpu_samples;
  double load_seconds = -1.0;
  for (const auto& shapes : all_shapes) {
    ++totals.shapes;
    runtime::CompiledSessionRequest request;
    request.model = model;
    request.model_sha256 = sha;
    request.config.provider_options = selection.options;
    request.shapes = shapes;
    request.dimension_overrides = runtime::dimension_overrides(inputs, shapes);
    try {
      auto opened = runtime::open_compiled_session(cache, status, request);
      for (const auto& note : opened.notes) fmt::print("  note: {}\n", note);
      totals.seconds += opened.seconds;
      std::string what;
      if (traits.cache_kind == runtime::CompiledCacheKind::kNone) {
        what = fmt::format(
            "session ready in {:.2f} s (nothing to keep: {} compiles nothing ahead "
            "of time)",
            opened.seconds, traits.name);
      } else if (opened.cache_hit) {
        ++totals.cached;
        what = fmt::format("cached, loaded in {:.2f} s, {}", opened.seconds,
                           runtime::format_bytes(opened.cache_bytes));
        load_seconds = load_seconds < 0 ? opened.seconds : std::min(load_seconds, opened.seconds);
      } else {
        ++totals.compiled;
        what = opened.cached ? fmt::format("compiled in {:.2f} s, {}", opened.seconds,
                                           runtime::format_bytes(opened.cache_bytes))
                             : fmt::format("compiled in {:.2f} s, not cached", opened.seconds);
      }
      fmt::print("  {:<40} {}\n", runtime::shapes_to_string(shapes), what);
      if (costs != nullptr)
        gpu_samples.push_back({batch_of(shapes), time_run(*opened.session, shapes)});
      if (traits.cache_kind == runtime::CompiledCacheKind::kNone && load_seconds < 0) {
        load_seconds = opened.seconds;
      }
    } catch (const Error& error) {
      ++totals.failed;
      fmt::print("  {:<40} failed: {}\n", runtime::shapes_to_string(shapes), error.what());
    }
  }
  if (costs == nullptr || gpu_samples.empty()) return;
  if (load_seconds < 0) {
    // Everything was compiled just now: time loading one of the fresh entries.
    runtime::CompiledSessionRequest request;
    request.model = model;
    request.model_sha256 = sha;
    request.config.provider_options = selection.options;
    request.shapes = all_shapes.front();
    request.dimension_overrides = runtime::dimension_overrides(inputs, all_shapes.front());
    load_seconds = runtime::open_compiled_session(cache, status, request).seconds;
  }
  // CPU timings: the smallest batch and one near 8 keep this short on slow machines.
  std::vector<runtime::TimingSample> cpu_samples;
  std::vector<const std::vector<runtime::InputShape>*> cpu_shapes = {&all_shapes.front()};
  for (const auto& shapes : all_shapes) {
    if (batch_of(shapes) <= 8 && batch_of(shapes) > batch_of(*cpu_shapes.back())) {
      if (cpu_shapes.size() == 1)
        cpu_shapes.push_back(&shapes);
      else
        cpu_shapes.back() = &shapes;
    }
  }
  for (const auto* shapes : cpu_shapes) {
    runtime::SessionConfig config;
    config.dimension_overrides = runtime::dimension_overrides(inputs, *shapes);
    runtime::OnnxSession session(model, config);
    runtime::run_on_zeros(session, *shapes);  // warm-up
    cpu_samples.push_back({batch_of(*shapes), time_run(session, *shapes)});
  }
  const auto constants = runtime::fit_cost_constants(cpu_samples, gpu_samples, load_seconds);
  costs->put(status.id, sha, model.stem().string(), constants);
  fmt::print("  cost model: CPU {:.4f} s/item; {} {:.4f} s/item + {:.4f} s/call, load {:.2f} s\n",
             constants.cpu_seconds_per_item, traits.name, constants.gpu_seconds_per_item,
             constants.gpu_seconds_per_call, constants.gpu_session_load_seconds);
}

void warm_model(const fs::path& source_model, const runtime::ProviderStatus& status,
                const pipeline::ProviderPlacement& selection, const runtime::ShapeProfile& profile,
                const std::vector<double>& steps, runtime::CompileCache& cache,
                runtime::CostModelStore* costs, Totals& totals) {
  stages::EmbeddingGraphSettings settings;
  settings.batch_buckets = profile.batch;
  settings.step_seconds = steps.front();
  if (const auto targets =
          stages::embedding_compile_targets(source_model, cache.root(), settings)) {
    // An embedding model: on an accelerator the pipeline splits it and loads its trunk (exact
    // mode; chunks of 998 frames at the batch buckets) or the trunk with the pooling in the
    // graph (shared mode; its few pass shapes), never the file itself, so compiling the file would
    // only fill the cache with graphs no run opens.
    fmt::print("{}: an embedding model; compiling what the pipeline loads: its {}{}\n",
               source_model.filename().string(), targets->trunk.label,
               targets->pooled ? " and its " + targets->pooled->label : std::string());
    warm_shapes(targets->trunk.model, targets->trunk.sha256, targets->trunk.inputs,
                targets->trunk_shapes, status, selection, cache, costs, totals);
    if (targets->pooled) {
      // No cost constants: they are per chunk and per call of the trunk's batches, which a pass
      // of hundreds of chunks does not fit; the placement takes the compiled passes as they are.
      // The pass shapes per step (--step): a whole pass spans chunks_per_pass steps, the shorter
      // ones for a recording's tail tail_chunks_per_pass steps.
      warm_shapes(targets->pooled->model, targets->pooled->sha256, targets->pooled->inputs,
                  targets->pooled_shapes, status, selection, cache, nullptr, totals);
      for (std::size_t i = 1; i < steps.size(); ++i) {
        settings.step_seconds = steps[i];
        const auto other = stages::embedding_compile_targets(source_model, cache.root(), settings);
        if (other && other->pooled) {
          warm_shapes(other->pooled->model, other->pooled->sha256, other->pooled->inputs,
                      other->pooled_shapes, status, selection, cache, nullptr, totals);
        }
      }
    }
    return;
  }
  // What the pipeline hands an accelerator (constant If inlined, zero LSTM states removed, batch
  // dynamic), under the digest the pipeline looks up.
  const auto file = graph::accelerator_model_file(source_model, cache.root() / "models");
  if (file.rewrite.changed()) {
    fmt::print("{}: as accelerators get it: {}\n", source_model.filename().string(),
               file.rewrite.describe());
  }
  const fs::path& model = file.path;
  runtime::SessionConfig cpu_config;
  runtime::OnnxSession cpu_session(model, cpu_config);
  const auto inputs = declared_inputs(cpu_session);
  for (const auto& input : cpu_session.inputs()) {
    if (input.element_type != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) {
      fmt::print("{}: skipped: input '{}' is {}, and warm-cache feeds float32 inputs only\n",
                 model.filename().string(), input.name,
                 runtime::element_type_name(input.element_type));
      ++totals.skipped;
      return;
    }
  }
  std::vector<std::vector<runtime::InputShape>> all_shapes;
  try {
    all_shapes = runtime::enumerate_bucket_shapes(inputs, profile);
  } catch (const Error& error) {
    fmt::print("{}: skipped: {}\n", model.filename().string(), error.what());
    ++totals.skipped;
    return;
  }
  warm_shapes(model, file.sha256, inputs, all_shapes, status, selection, cache, costs, totals);
}

void run_warm_cache(const WarmCacheArguments& arguments) {
  ProviderArguments provider_arguments;
  provider_arguments.provider = arguments.provider;
  provider_arguments.provider_options = arguments.provider_options;
  // Where the models run is the engine's decision, as for every face.
  const pipeline::ProviderPlacement selection =
      pipeline::provider_placement(provider_values(provider_arguments));
  const auto resolution = runtime::resolve_provider(selection.choice, runtime::provider_statuses());
  if (resolution.provider == runtime::ProviderId::kCpu) {
    fmt::print(
        "{}: nothing to compile: the CPU provider runs every input shape directly and keeps no "
        "compiled graphs. Compiled graphs are cached for migraphx (amdgpu), tensorrt, coreml and "
        "openvino; `parley providers` shows which of them this machine can use.\n",
        selection.choice.automatic ? "auto chose cpu" : "cpu");
    return;
  }
  const auto& status = runtime::find_status(runtime::provider_statuses(), resolution.provider);
  runtime::CompileCache cache(runtime::CompileCache::root_or_default(arguments.cache_dir));
  const auto profile = shape_profile(arguments);
  std::unique_ptr<runtime::CostModelStore> costs;
  if (arguments.measure) {
    costs = std::make_unique<runtime::CostModelStore>(cache.root(),
                                                      runtime::CostModelStore::this_machine_id());
  }
  fmt::print("warming {} ({}) into {}\n", runtime::provider_name(status.id), status.reason,
             cache.root().string());
  Totals totals;
  for (const auto& model : onnx_models(arguments.models)) {
    warm_model(model, status, selection, profile, arguments.steps, cache, costs.get(), totals);
  }
  if (costs) {
    costs->save();
    fmt::print("cost-model constants: {}\n", costs->file().string());
  }
  fmt::print("{} shapes: {} compiled, {} already cached, {} failed ({:.1f} s); {} models skipped\n",
             totals.shapes, totals.compiled, totals.cached, totals.failed, totals.seconds,
             totals.skipped);
  if (totals.failed > 0) {
    fail("{} of {} shapes could not be prepared on {} (see above)", totals.failed, totals.shapes,
         runtime::provider_name(status.id));
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
