#include "runtime/device_memory.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "core/error.h"

namespace parley::runtime {
namespace fs = std::filesystem;
namespace {

// CUDA_VISIBLE_DEVICES=2,3 makes device 0 the machine's device 2; only numeric lists are mapped.
int physical_index(const char* variable, int device_id) {
  const char* value = std::getenv(variable);
  if (value == nullptr || *value == '\0') return device_id;
  std::vector<int> indices;
  std::stringstream stream(value);
  std::string item;
  while (std::getline(stream, item, ',')) {
    char* end = nullptr;
    const long index = std::strtol(item.c_str(), &end, 10);
    if (end == item.c_str() || *end != '\0') return device_id;  // UUIDs: leave as is
    indices.push_back(static_cast<int>(index));
  }
  if (device_id < 0 || static_cast<std::size_t>(device_id) >= indices.size()) return device_id;
  return indices[static_cast<std::size_t>(device_id)];
}

// NVML is loaded at run time so parley needs no NVIDIA library to build or start.
std::optional<DeviceMemory> nvidia_memory(int device_id) {
  struct NvmlMemory {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
  };
  using Init = int (*)();
  using GetHandle = int (*)(unsigned int, void**);
  using GetMemory = int (*)(void*, NvmlMemory*);
  using Shutdown = int (*)();
  void* library = ::dlopen("libnvidia-ml.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (library == nullptr) return std::nullopt;
  std::optional<DeviceMemory> result;
  auto init = reinterpret_cast<Init>(::dlsym(library, "nvmlInit_v2"));
  auto get_handle = reinterpret_cast<GetHandle>(::dlsym(library, "nvmlDeviceGetHandleByIndex_v2"));
  auto get_memory = reinterpret_cast<GetMemory>(::dlsym(library, "nvmlDeviceGetMemoryInfo"));
  auto shutdown = reinterpret_cast<Shutdown>(::dlsym(library, "nvmlShutdown"));
  if (init != nullptr && get_handle != nullptr && get_memory != nullptr && shutdown != nullptr &&
      init() == 0) {
    void* device = nullptr;
    NvmlMemory memory{};
    const int index = physical_index("CUDA_VISIBLE_DEVICES", device_id);
    if (get_handle(static_cast<unsigned int>(index), &device) == 0 &&
        get_memory(device, &memory) == 0) {
      result = DeviceMemory{memory.total, memory.free, fmt::format("NVML device {}", index)};
    }
    shutdown();
  }
  ::dlclose(library);
  return result;
}

std::optional<std::uintmax_t> read_number(const fs::path& file) {
  std::ifstream in(file);
  std::uintmax_t value = 0;
  if (in >> value) return value;
  return std::nullopt;
}

std::optional<DeviceMemory> amd_memory(int device_id) {
  std::vector<fs::path> cards;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/sys/class/drm", ec)) {
    const auto name = entry.path().filename().string();
    if (name.rfind("card", 0) != 0 || name.find('-') != std::string::npos) continue;
    std::ifstream vendor(entry.path() / "device" / "vendor");
    std::string id;
    if (vendor >> id && id == "0x1002" &&
        fs::exists(entry.path() / "device" / "mem_info_vram_total")) {
      cards.push_back(entry.path());
    }
  }
  std::sort(cards.begin(), cards.end());
  int index = physical_index("ROCR_VISIBLE_DEVICES", device_id);
  index = physical_index("HIP_VISIBLE_DEVICES", index);
  if (index < 0 || static_cast<std::size_t>(index) >= cards.size()) return std::nullopt;
  const auto& card = cards[static_cast<std::size_t>(index)];
  auto total = read_number(card / "device" / "mem_info_vram_total");
  auto used = read_number(card / "device" / "mem_info_vram_used");
  if (!total || !used || *used > *total) return std::nullopt;
  return DeviceMemory{*total, *total - *used, fmt::format("sysfs {}", card.filename().string())};
}

}  // namespace

std::optional<DeviceMemory> query_device_memory(ProviderId provider, int device_id) {
  const auto vendor = traits(provider).device_vendor;
  if (vendor == "nvidia") return nvidia_memory(device_id);
  if (vendor == "amd") return amd_memory(device_id);
  return std::nullopt;
}

int count_devices(ProviderId provider) {
  // More than any one host holds; the loop ends at the first device that does not answer.
  constexpr int kMostDevices = 64;
  const char* visible = std::getenv(
      traits(provider).device_vendor == "amd" ? "HIP_VISIBLE_DEVICES" : "CUDA_VISIBLE_DEVICES");
  int limit = kMostDevices;
  if (visible != nullptr && *visible != '\0') {
    limit = 1 + static_cast<int>(std::count(visible, visible + std::strlen(visible), ','));
  }
  int count = 0;
  while (count < limit && query_device_memory(provider, count)) ++count;
  return count;
}

MemoryNeed estimate_memory_need(std::uintmax_t model_file_bytes,
                                std::uintmax_t input_bytes_per_item,
                                std::uintmax_t output_bytes_per_item, double activation_factor) {
  MemoryNeed need;
  need.fixed_bytes = 2 * model_file_bytes;
  need.bytes_per_item = static_cast<std::uintmax_t>(std::ceil(
      static_cast<double>(input_bytes_per_item + output_bytes_per_item) * activation_factor));
  return need;
}

int sessions_that_fit(const std::optional<DeviceMemory>& memory, std::uintmax_t bytes_per_session,
                      int wanted, double usable_fraction) {
  if (!memory || bytes_per_session == 0 || wanted <= 1) return std::max(wanted, 1);
  const double usable = static_cast<double>(memory->free_bytes) * usable_fraction;
  const auto fitting =
      static_cast<int>(std::floor(usable / static_cast<double>(bytes_per_session)));
  return std::clamp(fitting, 1, wanted);
}

int device_id_option(const ProviderOptions& options) {
  auto it = options.find("device_id");
  if (it == options.end()) return 0;
  try {
    return std::stoi(it->second);
  } catch (const std::exception&) {
    fail("provider_options device_id={}: expected a device number", it->second);
  }
}

std::optional<WatchedDevice> watched_device(ProviderId segmentation,
                                            const ProviderOptions& segmentation_options,
                                            ProviderId embedding,
                                            const ProviderOptions& embedding_options) {
  if (traits(embedding).accelerator)
    return WatchedDevice{embedding, device_id_option(embedding_options)};
  if (traits(segmentation).accelerator) {
    return WatchedDevice{segmentation, device_id_option(segmentation_options)};
  }
  return std::nullopt;
}

std::string format_bytes(std::uintmax_t bytes) {
  constexpr double kKiB = 1024.0;
  const double value = static_cast<double>(bytes);
  if (value >= kKiB * kKiB * kKiB) return fmt::format("{:.1f} GiB", value / (kKiB * kKiB * kKiB));
  if (value >= kKiB * kKiB) return fmt::format("{:.0f} MiB", value / (kKiB * kKiB));
  if (value >= kKiB) return fmt::format("{:.0f} KiB", value / kKiB);
  return fmt::format("{} B", bytes);
}

MemoryFit fit_batch_to_memory(const Buckets& buckets, std::size_t planned_batch,
                              const std::optional<DeviceMemory>& memory, const MemoryNeed& need,
                              double usable_fraction) {
  MemoryFit fit;
  const Buckets candidates = buckets.capped(planned_batch);
  fit.max_batch = candidates.largest();
  if (!memory) return fit;
  const auto usable = static_cast<std::uintmax_t>(static_cast<double>(memory->free_bytes) *
                                                  std::clamp(usable_fraction, 0.0, 1.0));
  const auto& sizes = candidates.sizes();
  for (auto it = sizes.rbegin(); it != sizes.rend(); ++it) {
    if (need.for_batch(*it) <= usable) {
      fit.max_batch = *it;
      fit.shrunk = *it < candidates.largest();
      if (fit.shrunk) {
        fit.message = fmt::format(
            "GPU memory: {} free ({}); a batch of {} needs about {}, so batches of {} are used",
            format_bytes(memory->free_bytes), memory->source, candidates.largest(),
            format_bytes(need.for_batch(candidates.largest())), *it);
      }
      return fit;
    }
  }
  fit.fits = false;
  fit.max_batch = 0;
  fit.message = fmt::format("GPU memory: {} free ({}); even a batch of {} needs about {}",
                            format_bytes(memory->free_bytes), memory->source, candidates.smallest(),
                            format_bytes(need.for_batch(candidates.smallest())));
  return fit;
}

}  // namespace parley::runtime
