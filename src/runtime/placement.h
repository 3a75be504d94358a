#pragma once
// Routing one model's job on this machine: resolves --provider against what is available, looks
// up which batch buckets are already compiled, reads the stored cost-model constants and the
// free device memory, then applies route() (placement_rule.h). Notices (CPU fallback, smaller
// batches) are said once per process.
#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "runtime/compile_cache.h"
#include "runtime/cost_model.h"
#include "runtime/notice.h"
#include "runtime/placement_rule.h"
#include "runtime/provider_discovery.h"

namespace parley::runtime {

struct ModelRouteRequest {
  ProviderChoice choice;
  ProviderOptions options;  // --provider-option
  ForceMode force = ForceMode::kNone;
  std::filesystem::path model;
  std::string model_sha256;
  // The model's input shapes for one call of `batch` items (what the cache is keyed by).
  std::function<std::vector<InputShape>(std::size_t batch)> shapes_for_batch;
  std::size_t items = 0;
  Buckets buckets = default_batch_buckets();
  MemoryNeed memory_need;
  bool session_loaded = false;
};

// The batch buckets whose compiled graphs for this model are in the cache and intact (sizes
// checked; the full sha256 check happens when the entry is opened).
std::vector<std::size_t> compiled_batches(const CompileCache& cache, const ProviderStatus& status,
                                          const ModelRouteRequest& request);

RouteDecision route_model(const ModelRouteRequest& request, const CompileCache& cache,
                          const CostModelStore& costs,
                          const std::vector<ProviderStatus>& statuses = provider_statuses(),
                          OnceNotices& said_once = notices());

}  // namespace parley::runtime
