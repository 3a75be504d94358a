#include "runtime/placement.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>

#include "core/error.h"

namespace parley::runtime {
namespace {

// The CPU runs the real items in batches of the largest bucket; it needs no padding, so the
// tail is not padded.
std::vector<BatchSlice> cpu_plan(std::size_t items, const Buckets& buckets) {
  std::vector<BatchSlice> plan;
  for (std::size_t offset = 0; offset < items; offset += buckets.largest()) {
    const std::size_t count = std::min(buckets.largest(), items - offset);
    plan.push_back({offset, count, count});
  }
  return plan;
}

PlacementDecision on_cpu(const PlacementRequest& request, std::string reason,
                         std::string notice = "") {
  PlacementDecision decision;
  decision.provider = ProviderId::kCpu;
  decision.plan = cpu_plan(request.items, request.buckets);
  decision.reason = std::move(reason);
  decision.notice = std::move(notice);
  return decision;
}

// Plans the accelerator calls, applying the memory check; nullopt when nothing fits.
std::optional<std::vector<BatchSlice>> accelerator_plan(const PlacementRequest& request,
                                                        ProviderId provider, std::string& notice) {
  const bool static_shapes = traits(provider).static_shapes;
  const MemoryFit fit = fit_batch_to_memory(request.buckets, request.buckets.largest(),
                                            request.memory, request.memory_need);
  if (!fit.fits) {
    notice = fit.message;
    return std::nullopt;
  }
  if (fit.shrunk) notice = fit.message;
  if (static_shapes) return plan_batches(request.items, request.buckets, fit.max_batch);
  // Dynamic shapes: no padding needed, only the batch cap.
  return cpu_plan(request.items, request.buckets.capped(fit.max_batch));
}

}  // namespace

PlacementDecision place(const PlacementRequest& request) {
  const std::string& model = request.model_name;
  if (request.force == ForceMode::kCpu)
    return on_cpu(request, fmt::format("{}: CPU (forced)", model));
  if (!request.choice.automatic && request.choice.provider == ProviderId::kCpu) {
    return on_cpu(request, fmt::format("{}: CPU (provider cpu requested)", model));
  }
  const bool strict = request.force == ForceMode::kGpu || !request.choice.automatic;
  const std::string request_source =
      request.force == ForceMode::kGpu
          ? std::string("GPU forced")
          : fmt::format("provider {} requested", request.choice.to_string());
  if (!request.accelerator) {
    if (strict) {
      fail("{}: no GPU provider can be used: {}", request_source,
           request.accelerator_problem.empty() ? std::string("none was found")
                                               : request.accelerator_problem);
    }
    return on_cpu(
        request,
        // The problem itself is long (every candidate's reason) and said once in the
        // notice; the per-model line stays one short line.
        fmt::format("{}: CPU (no GPU provider can be used; `parley providers` says why)", model),
        fmt::format("no GPU provider can be used ({}); running on the CPU",
                    request.accelerator_problem));
  }
  const ProviderId provider = *request.accelerator;
  const auto& provider_traits = traits(provider);

  std::string memory_notice;
  auto plan = accelerator_plan(request, provider, memory_notice);
  if (!plan) {
    if (strict) fail("{}: {}: {}", request_source, model, memory_notice);
    return on_cpu(
        request, fmt::format("{}: CPU ({})", model, memory_notice),
        fmt::format("{}: {}; running {} on the CPU", provider_traits.name, memory_notice, model));
  }

  std::vector<std::size_t> cold;
  if (provider_traits.static_shapes) {
    for (const auto& slice : *plan) {
      const bool compiled =
          std::find(request.compiled_batches.begin(), request.compiled_batches.end(),
                    slice.bucket) != request.compiled_batches.end();
      if (!compiled && std::find(cold.begin(), cold.end(), slice.bucket) == cold.end()) {
        cold.push_back(slice.bucket);
      }
    }
  }

  PlacementDecision decision;
  decision.provider = provider;
  decision.on_accelerator = true;
  decision.plan = *plan;
  decision.notice = memory_notice;
  if (strict) {
    decision.reason = cold.empty()
                          ? fmt::format("{}: {} ({})", model, provider_traits.name, request_source)
                          : fmt::format(
                                "{}: {} ({}; compiling batch sizes {} first: `parley "
                                "warm-cache --provider {}` does this ahead of time)",
                                model, provider_traits.name, request_source, fmt::join(cold, ","),
                                provider_traits.name);
    return decision;
  }
  if (!cold.empty()) {
    return on_cpu(
        request,
        fmt::format("{}: CPU (batch sizes {} are not compiled for {} yet; `parley "
                    "warm-cache --provider {}` compiles them)",
                    model, fmt::join(cold, ","), provider_traits.name, provider_traits.name));
  }
  if (!request.costs) {
    decision.reason = fmt::format(
        "{}: {} (no cost constants measured on this machine; `parley warm-cache --provider {}` "
        "measures them)",
        model, provider_traits.name, provider_traits.name);
    return decision;
  }
  const CostEstimate estimate =
      estimate_cost(*request.costs, request.items, *plan, request.session_loaded);
  if (!estimate.gpu_wins) {
    return on_cpu(request, fmt::format("{}: CPU (cost model: {})", model, estimate.explanation));
  }
  decision.reason =
      fmt::format("{}: {} (cost model: {})", model, provider_traits.name, estimate.explanation);
  return decision;
}

std::vector<std::size_t> compiled_batches(const CompileCache& cache, const ProviderStatus& status,
                                          const ModelPlacementRequest& request) {
  std::vector<std::size_t> compiled;
  if (!request.shapes_for_batch) {
    fail("{}: placement needs the model's input shapes per batch size", request.model.string());
  }
  const ProviderOptions options = effective_options(status.id, request.options);
  for (std::size_t batch : request.buckets.sizes()) {
    const auto key =
        make_compile_key(request.model_sha256, request.model.stem().string(),
                         request.shapes_for_batch(batch), status.id, options, status.environment);
    std::error_code ec;
    if (!std::filesystem::exists(cache.entry_dir(key), ec)) continue;
    const auto entry =
        inspect_entry(cache.entry_dir(key), Verification::kSizes, &key, &key.environment);
    if (entry.state == EntryState::kValid) compiled.push_back(batch);
  }
  return compiled;
}

PlacementDecision place_model(const ModelPlacementRequest& request, const CompileCache& cache,
                              const CostModelStore& costs,
                              const std::vector<ProviderStatus>& statuses, OnceNotices& said_once) {
  PlacementRequest placement_request;
  placement_request.choice = request.choice;
  placement_request.force = request.force;
  placement_request.model_name = request.model.stem().string();
  placement_request.items = request.items;
  placement_request.buckets = request.buckets;
  placement_request.memory_need = request.memory_need;
  placement_request.session_loaded = request.session_loaded;
  if (request.force != ForceMode::kCpu) {
    // Under --force-gpu the CPU fallback notice would be wrong: place() fails instead.
    OnceNotices quiet(nullptr);
    const auto resolution = resolve_provider(request.choice, statuses,
                                             request.force == ForceMode::kGpu ? quiet : said_once);
    placement_request.accelerator = resolution.accelerator;
    placement_request.accelerator_problem = resolution.problem;
    if (resolution.accelerator) {
      const auto& status = find_status(statuses, *resolution.accelerator);
      if (traits(status.id).static_shapes) {
        placement_request.compiled_batches = compiled_batches(cache, status, request);
      }
      placement_request.costs = costs.get(status.id, request.model_sha256);
      placement_request.memory = query_device_memory(status.id, device_id_option(request.options));
    }
  }
  PlacementDecision decision = place(placement_request);
  // Without an accelerator resolve_provider() has already said so.
  if (!decision.notice.empty() && placement_request.accelerator) said_once.say(decision.notice);
  return decision;
}

}  // namespace parley::runtime
