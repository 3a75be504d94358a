#include "pipeline/warm_cache.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <system_error>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "core/stage_timer.h"
#include "graph/accelerator_rewrite.h"
#include "models/model_locator.h"
#include "runtime/compile_cache.h"
#include "runtime/compiled_session.h"
#include "runtime/onnx_session.h"
#include "runtime/provider_discovery.h"
#include "stages/embedding_graphs.h"

namespace parley::pipeline {
namespace {
namespace fs = std::filesystem;

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

std::vector<runtime::DeclaredInput> declared_inputs(const runtime::OnnxSession& session) {
  std::vector<runtime::DeclaredInput> inputs;
  for (const auto& input : session.inputs())
    inputs.push_back({input.name, input.shape, input.symbols});
  return inputs;
}

WarmTarget embedding_target(const stages::EmbeddingGraph& graph,
                            std::vector<std::vector<runtime::InputShape>> shapes,
                            bool measure_costs) {
  return {graph.label, graph.model, graph.sha256, graph.inputs, std::move(shapes), measure_costs};
}

double time_run(runtime::OnnxSession& session, const std::vector<runtime::InputShape>& shapes) {
  const auto start = std::chrono::steady_clock::now();
  runtime::run_on_zeros(session, shapes);
  return seconds_since(start);
}

std::size_t batch_of(const std::vector<runtime::InputShape>& shapes) {
  return shapes.empty() || shapes[0].dims.empty() ? 1 : static_cast<std::size_t>(shapes[0].dims[0]);
}

runtime::CompiledSessionRequest compile_request(const WarmTarget& target,
                                                const std::vector<runtime::InputShape>& shapes,
                                                const runtime::ProviderOptions& options) {
  runtime::CompiledSessionRequest request;
  request.model = target.model;
  request.model_sha256 = target.sha256;
  request.config.provider_options = options;
  request.shapes = shapes;
  request.dimension_overrides = runtime::dimension_overrides(target.inputs, shapes);
  return request;
}

class Warmer {
 public:
  Warmer(const runtime::ProviderStatus& status, const runtime::ProviderOptions& options,
         runtime::CompileCache& cache, runtime::CostModelStore* costs, WarmCacheObserver& observer,
         WarmCacheSummary& summary)
      : status_(status),
        options_(options),
        cache_(cache),
        costs_(costs),
        observer_(observer),
        summary_(summary) {}

  // Compiles `target` at each of its shapes; with a cost store and target.measure_costs, times
  // each shape and the CPU and stores the cost-model constants.
  void warm(const WarmTarget& target) {
    const auto& traits = runtime::traits(status_.id);
    observer_.target_started(target, status_.id);
    const bool measuring = costs_ != nullptr && target.measure_costs;
    std::vector<runtime::TimingSample> gpu_samples;
    double load_seconds = -1.0;
    for (const auto& shapes : target.shapes) {
      ++summary_.shapes;
      WarmShapeOutcome outcome;
      outcome.shapes = shapes;
      try {
        auto opened = runtime::open_compiled_session(cache_, status_,
                                                     compile_request(target, shapes, options_));
        outcome.notes = opened.notes;
        outcome.seconds = opened.seconds;
        outcome.cache_bytes = opened.cache_bytes;
        outcome.kept = opened.cached;
        summary_.seconds += opened.seconds;
        if (traits.cache_kind == runtime::CompiledCacheKind::kNone) {
          outcome.kind = WarmShapeOutcome::Kind::kReady;
          if (load_seconds < 0) load_seconds = opened.seconds;
        } else if (opened.cache_hit) {
          ++summary_.cached;
          outcome.kind = WarmShapeOutcome::Kind::kCached;
          load_seconds = load_seconds < 0 ? opened.seconds : std::min(load_seconds, opened.seconds);
        } else {
          ++summary_.compiled;
          outcome.kind = WarmShapeOutcome::Kind::kCompiled;
        }
        observer_.shape_done(target, outcome);
        if (measuring) gpu_samples.push_back({batch_of(shapes), time_run(*opened.session, shapes)});
      } catch (const Error& error) {
        ++summary_.failed;
        outcome.kind = WarmShapeOutcome::Kind::kFailed;
        outcome.error = error.what();
        observer_.shape_done(target, outcome);
      }
    }
    if (!measuring || gpu_samples.empty()) return;
    if (load_seconds < 0) {
      // Everything was compiled just now: time loading one of the fresh entries.
      load_seconds = runtime::open_compiled_session(
                         cache_, status_, compile_request(target, target.shapes.front(), options_))
                         .seconds;
    }
    const auto constants =
        runtime::fit_cost_constants(cpu_samples(target), gpu_samples, load_seconds);
    costs_->put(status_.id, target.sha256, target.model.stem().string(), constants);
    observer_.costs_measured(target, status_.id, constants);
  }

 private:
  // CPU timings: the smallest batch and one near 8 keep this short on slow machines.
  static std::vector<runtime::TimingSample> cpu_samples(const WarmTarget& target) {
    std::vector<const std::vector<runtime::InputShape>*> timed = {&target.shapes.front()};
    for (const auto& shapes : target.shapes) {
      if (batch_of(shapes) <= 8 && batch_of(shapes) > batch_of(*timed.back())) {
        if (timed.size() == 1)
          timed.push_back(&shapes);
        else
          timed.back() = &shapes;
      }
    }
    std::vector<runtime::TimingSample> samples;
    for (const auto* shapes : timed) {
      runtime::SessionConfig config;
      config.dimension_overrides = runtime::dimension_overrides(target.inputs, *shapes);
      runtime::OnnxSession session(target.model, config);
      runtime::run_on_zeros(session, *shapes);  // warm-up
      samples.push_back({batch_of(*shapes), time_run(session, *shapes)});
    }
    return samples;
  }

  const runtime::ProviderStatus& status_;
  const runtime::ProviderOptions& options_;
  runtime::CompileCache& cache_;
  runtime::CostModelStore* costs_;
  WarmCacheObserver& observer_;
  WarmCacheSummary& summary_;
};

}  // namespace

void WarmCacheConfig::validate() const {
  if (steps.empty()) fail("steps is empty: name at least one chunk step in seconds");
  for (const double step : steps) {
    if (!(step > 0.0)) fail("steps must be above 0 seconds (got {})", step);
  }
  for (const auto& [name, sizes] : dimensions) {
    if (name.empty()) fail("dimensions: a dimension has no name (sizes {})", sizes.to_string());
  }
}

std::map<std::string, runtime::Buckets> default_warm_cache_dimensions() {
  return {{"samples", runtime::Buckets({160000})},
          {"T", runtime::Buckets({998})},
          {"frames", runtime::Buckets({998})}};
}

void add_warm_cache_dimension(WarmCacheConfig& config, std::string_view text) {
  const auto equals = text.find('=');
  if (equals == std::string_view::npos || equals == 0) {
    fail("dimensions: expected NAME=SIZES (e.g. frames=200,998), got '{}'", text);
  }
  config.dimensions.insert_or_assign(std::string(text.substr(0, equals)),
                                     runtime::Buckets::parse(text.substr(equals + 1)));
}

runtime::ShapeProfile warm_cache_profile(const WarmCacheConfig& config) {
  runtime::ShapeProfile profile;
  profile.dim_buckets = default_warm_cache_dimensions();
  if (config.batch_buckets) profile.batch = *config.batch_buckets;
  for (const auto& [name, sizes] : config.dimensions) {
    profile.dim_buckets.insert_or_assign(name, sizes);
  }
  return profile;
}

WarmModelPlan plan_warm_model(const fs::path& model, const runtime::ShapeProfile& profile,
                              const std::vector<double>& steps, const fs::path& cache_root) {
  WarmModelPlan plan;
  plan.source = model;
  stages::EmbeddingGraphSettings settings;
  settings.batch_buckets = profile.batch;
  settings.step_seconds = steps.empty() ? 1.0 : steps.front();
  if (const auto targets = stages::embedding_compile_targets(model, cache_root, settings)) {
    // On an accelerator the pipeline splits an embedding model and loads its trunk (exact mode;
    // chunks at the batch buckets) or the trunk with the pooling in the graph (shared mode; its
    // few pass shapes per step: whole passes and the shorter ones of a recording's tail), never the
    // file itself: compiling the file would only fill the cache with graphs no run opens.
    plan.embedding = true;
    plan.targets.push_back(embedding_target(targets->trunk, targets->trunk_shapes, true));
    if (targets->pooled) {
      plan.targets.push_back(embedding_target(*targets->pooled, targets->pooled_shapes, false));
      for (std::size_t i = 1; i < steps.size(); ++i) {
        settings.step_seconds = steps[i];
        const auto other = stages::embedding_compile_targets(model, cache_root, settings);
        if (other && other->pooled) {
          plan.targets.push_back(embedding_target(*other->pooled, other->pooled_shapes, false));
        }
      }
    }
    return plan;
  }
  // What the pipeline hands an accelerator (constant If inlined, zero LSTM states removed, batch
  // dynamic), under the digest the pipeline looks up.
  const auto file = graph::accelerator_model_file(model, cache_root / "models");
  if (file.rewrite.changed()) plan.rewrite = file.rewrite.describe();
  const runtime::OnnxSession session(file.path, runtime::SessionConfig{});
  for (const auto& input : session.inputs()) {
    if (input.element_type != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) {
      plan.skipped = fmt::format("input '{}' is {}, and warm-cache feeds float32 inputs only",
                                 input.name, runtime::element_type_name(input.element_type));
      return plan;
    }
  }
  WarmTarget target;
  target.model = file.path;
  target.sha256 = file.sha256;
  target.inputs = declared_inputs(session);
  try {
    target.shapes = runtime::enumerate_bucket_shapes(target.inputs, profile);
  } catch (const Error& error) {
    plan.skipped = error.what();
    return plan;
  }
  plan.targets.push_back(std::move(target));
  return plan;
}

WarmCacheModels find_warm_cache_models(const std::optional<fs::path>& models_dir) {
  std::vector<std::string> searched;
  for (const auto& place : models::default_search_places(models_dir)) {
    auto found = onnx_files(place.dir);
    if (!found.empty()) return {place.dir, place.origin, std::move(found)};
    searched.push_back(fmt::format("{} ({})", place.dir.string(), place.origin));
  }
  fail(
      "no .onnx models in {} (set models_dir to a folder that holds them, or fetch them with "
      "`parley models fetch`)",
      searched.empty() ? std::string("any folder: HOME is unset")
                       : fmt::format("{}", fmt::join(searched, ", ")));
}

WarmCacheSummary warm_cache(const WarmCacheConfig& config, WarmCacheObserver& observer) {
  config.validate();
  WarmCacheSummary summary;
  summary.automatic = config.placement.choice.automatic;
  const auto& statuses = runtime::provider_statuses();
  const auto resolution = runtime::resolve_provider(config.placement.choice, statuses);
  summary.provider = resolution.provider;
  if (resolution.provider == runtime::ProviderId::kCpu) {
    summary.nothing_to_compile = true;
    return summary;
  }
  const auto& status = runtime::find_status(statuses, resolution.provider);
  runtime::CompileCache cache(runtime::CompileCache::root_or_default(config.cache_dir));
  std::unique_ptr<runtime::CostModelStore> costs;
  if (config.measure) {
    costs = std::make_unique<runtime::CostModelStore>(cache.root(),
                                                      runtime::CostModelStore::this_machine_id());
  }
  observer.started(status.id, status.reason, cache.root());
  const WarmCacheModels found = find_warm_cache_models(config.models_dir);
  observer.models_found(found);
  const runtime::ShapeProfile profile = warm_cache_profile(config);
  Warmer warmer(status, config.placement.options, cache, costs.get(), observer, summary);
  for (const fs::path& model : found.models) {
    const WarmModelPlan plan = plan_warm_model(model, profile, config.steps, cache.root());
    observer.model_planned(plan);
    if (!plan.skipped.empty()) {
      ++summary.skipped_models;
      continue;
    }
    for (const WarmTarget& target : plan.targets) warmer.warm(target);
  }
  if (costs) {
    costs->save();
    summary.costs_file = costs->file();
  }
  return summary;
}

}  // namespace parley::pipeline
