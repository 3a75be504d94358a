#pragma once
// Free accelerator memory and the largest batch that fits in it. A batch that does not fit is
// shrunk to a smaller bucket, or the work goes to the CPU, and the caller says so.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "runtime/provider.h"
#include "runtime/shape_plan.h"

namespace parley::runtime {

struct DeviceMemory {
  std::uintmax_t total_bytes = 0;
  std::uintmax_t free_bytes = 0;
  std::string source;  // where the numbers came from ("NVML", "sysfs card1")
};

// Memory of the provider's device number `device_id` (after CUDA_VISIBLE_DEVICES /
// HIP_VISIBLE_DEVICES remapping), from NVML for NVIDIA and sysfs for AMD; nullopt when the
// machine cannot tell (then no check is made).
std::optional<DeviceMemory> query_device_memory(ProviderId provider, int device_id);

// What one model call needs on the device: a fixed part (weights, workspace) and a part per item
// (inputs, outputs, activations).
struct MemoryNeed {
  std::uintmax_t fixed_bytes = 0;
  std::uintmax_t bytes_per_item = 0;

  std::uintmax_t for_batch(std::size_t batch) const { return fixed_bytes + bytes_per_item * batch; }
};

// How many devices of `provider` this process sees (after CUDA_VISIBLE_DEVICES and friends),
// counted by asking each for its memory: 0 on the CPU or when the machine cannot tell.
int count_devices(ProviderId provider);

// A rough need from sizes: weights twice (weights plus workspace) and inputs plus outputs times
// `activation_factor` per item. Measured numbers should replace it where they exist.
MemoryNeed estimate_memory_need(std::uintmax_t model_file_bytes,
                                std::uintmax_t input_bytes_per_item,
                                std::uintmax_t output_bytes_per_item,
                                double activation_factor = 8.0);

struct MemoryFit {
  bool fits = true;           // some bucket fits (or memory is unknown)
  bool shrunk = false;        // max_batch is below the planned batch
  std::size_t max_batch = 0;  // largest usable bucket
  std::string message;        // empty when the planned batch fits
};

// The largest bucket not above `planned_batch` whose need fits in `usable_fraction` of the free
// memory. Unknown memory (nullopt) keeps the planned batch.
MemoryFit fit_batch_to_memory(const Buckets& buckets, std::size_t planned_batch,
                              const std::optional<DeviceMemory>& memory, const MemoryNeed& need,
                              double usable_fraction = 0.9);

// How many sessions of `bytes_per_session` each fit in `usable_fraction` of the free memory:
// `wanted` when they all fit or the memory is unknown, never fewer than 1 (the batch check above
// decides whether one fits at all).
int sessions_that_fit(const std::optional<DeviceMemory>& memory, std::uintmax_t bytes_per_session,
                      int wanted, double usable_fraction = 0.9);

// The device number in a provider's options ("device_id", 0 when absent); fails naming the
// option when it is not a number.
int device_id_option(const ProviderOptions& options);

// The device whose memory a report watches (`parley bench`'s device memory, the server's
// metrics): the embedding's accelerator, else the segmentation's (the embedding holds the most).
struct WatchedDevice {
  ProviderId provider = ProviderId::kCpu;
  int device_id = 0;  // device_id_option of that network's provider options
};
// nullopt when both networks run on the host (nothing to watch).
std::optional<WatchedDevice> watched_device(ProviderId segmentation,
                                            const ProviderOptions& segmentation_options,
                                            ProviderId embedding,
                                            const ProviderOptions& embedding_options);

// "1.5 GiB", "300 MiB", "12 KiB", "17 B".
std::string format_bytes(std::uintmax_t bytes);

}  // namespace parley::runtime
