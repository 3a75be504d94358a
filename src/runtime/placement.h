#pragma once
// Where one model's job runs (one placement module for every network):
// - place(): the rule. A provider forced to the CPU or the GPU, or named explicitly, is strict.
//   Under `auto` the accelerator is used only for shapes it has already compiled (cache hits:
//   cold shapes run on the CPU rather than wait for a compile), only when the batch fits its
//   free memory, and only when the cost model says it beats the CPU.
// - place_model(): the rule applied on this machine: resolves the provider choice against what
//   is available, looks up which batch buckets are already compiled, reads the stored cost-model
//   constants and the free device memory. Notices (CPU fallback, smaller batches) are said once
//   per process.
#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "runtime/compile_cache.h"
#include "runtime/cost_model.h"
#include "runtime/device_memory.h"
#include "runtime/notice.h"
#include "runtime/provider.h"
#include "runtime/provider_discovery.h"
#include "runtime/shape_plan.h"

namespace parley::runtime {

enum class ForceMode { kNone, kGpu, kCpu };

struct PlacementRequest {
  ProviderChoice choice;  // --provider
  ForceMode force = ForceMode::kNone;
  // The accelerator that `choice` resolved to, when one is usable; otherwise why not.
  std::optional<ProviderId> accelerator;
  std::string accelerator_problem;
  std::string model_name;  // for messages
  std::size_t items = 0;   // real items in the job
  Buckets buckets = default_batch_buckets();
  // Static-shape providers: the batch sizes already compiled (cache hits) for this model.
  std::vector<std::size_t> compiled_batches;
  bool session_loaded = false;  // the accelerator session for this model is open already
  std::optional<CostConstants> costs;
  std::optional<DeviceMemory> memory;
  MemoryNeed memory_need;
};

struct PlacementDecision {
  ProviderId provider = ProviderId::kCpu;
  bool on_accelerator = false;
  std::vector<BatchSlice> plan;  // the calls to make (bucket-padded on a static-shape provider)
  std::string reason;            // one line for the log
  std::string notice;            // said once to the user when non-empty (shrunk batch, fallback)
};

// Throws parley::Error when a strict request cannot be met (no usable accelerator under
// --force-gpu or an explicit provider, or not even one item fits its memory).
PlacementDecision place(const PlacementRequest& request);

struct ModelPlacementRequest {
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
                                          const ModelPlacementRequest& request);

PlacementDecision place_model(const ModelPlacementRequest& request, const CompileCache& cache,
                              const CostModelStore& costs,
                              const std::vector<ProviderStatus>& statuses = provider_statuses(),
                              OnceNotices& said_once = notices());

}  // namespace parley::runtime
