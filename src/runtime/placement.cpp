#include "runtime/placement.h"

#include <fmt/format.h>

#include "core/error.h"

namespace parley::runtime {

std::vector<std::size_t> compiled_batches(const CompileCache& cache, const ProviderStatus& status,
                                          const ModelRouteRequest& request) {
  std::vector<std::size_t> compiled;
  if (!request.shapes_for_batch) {
    fail("{}: routing needs the model's input shapes per batch size", request.model.string());
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

RouteDecision route_model(const ModelRouteRequest& request, const CompileCache& cache,
                          const CostModelStore& costs, const std::vector<ProviderStatus>& statuses,
                          OnceNotices& said_once) {
  RouteRequest route_request;
  route_request.choice = request.choice;
  route_request.force = request.force;
  route_request.model_name = request.model.stem().string();
  route_request.items = request.items;
  route_request.buckets = request.buckets;
  route_request.memory_need = request.memory_need;
  route_request.session_loaded = request.session_loaded;
  if (request.force != ForceMode::kCpu) {
    // Under --force-gpu the CPU fallback notice would be wrong: route() fails instead.
    OnceNotices quiet(nullptr);
    const auto resolution = resolve_provider(request.choice, statuses,
                                             request.force == ForceMode::kGpu ? quiet : said_once);
    route_request.accelerator = resolution.accelerator;
    route_request.accelerator_problem = resolution.problem;
    if (resolution.accelerator) {
      const auto& status = find_status(statuses, *resolution.accelerator);
      if (traits(status.id).static_shapes) {
        route_request.compiled_batches = compiled_batches(cache, status, request);
      }
      route_request.costs = costs.get(status.id, request.model_sha256);
      route_request.memory = query_device_memory(status.id, device_id_option(request.options));
    }
  }
  RouteDecision decision = route(route_request);
  // Without an accelerator resolve_provider() has already said so.
  if (!decision.notice.empty() && route_request.accelerator) said_once.say(decision.notice);
  return decision;
}

}  // namespace parley::runtime
