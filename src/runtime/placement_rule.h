#pragma once
// Where one model's job runs. `--force-cpu` and `--force-gpu` are strict, and so is a provider
// named with `--provider`. Under `auto` the accelerator is used only for shapes it has already
// compiled (cache hits: cold shapes run on the CPU rather than wait for a compile), only when the
// batch fits its free memory, and only when the cost model says it beats the CPU.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "runtime/cost_model.h"
#include "runtime/device_memory.h"
#include "runtime/provider.h"
#include "runtime/shape_plan.h"

namespace parley::runtime {

enum class ForceMode { kNone, kGpu, kCpu };

struct RouteRequest {
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

struct RouteDecision {
  ProviderId provider = ProviderId::kCpu;
  bool on_accelerator = false;
  std::vector<BatchSlice> plan;  // the calls to make (bucket-padded on a static-shape provider)
  std::string reason;            // one line for the log
  std::string notice;            // said once to the user when non-empty (shrunk batch, fallback)
};

// Throws parley::Error when a strict request cannot be met (no usable accelerator under
// --force-gpu or an explicit provider, or not even one item fits its memory).
RouteDecision route(const RouteRequest& request);

}  // namespace parley::runtime
