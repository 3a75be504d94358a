#pragma once
// Which execution providers this build and machine can use, and for each one that cannot, why
// not and what to do. Gathering the facts touches the system (ONNX Runtime, provider libraries,
// /proc and /sys); judging them is a pure function, so every message is tested on the CPU.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/compile_cache.h"
#include "runtime/notice.h"
#include "runtime/provider.h"

namespace parley::runtime {

struct SearchDir {
  std::filesystem::path dir;
  std::string origin;  // "$PARLEY_PROVIDER_PATH", "next to libonnxruntime", ...
};

// What was learned about one provider library that was found on disk.
struct LibraryFacts {
  std::filesystem::path file;
  std::string origin;    // origin of the folder it was found in
  std::string identity;  // "name size mtime": part of the compiled-graph cache key
  bool plugin_registered = false;
  std::string plugin_error;                 // why RegisterExecutionProviderLibrary failed
  std::vector<std::string> plugin_devices;  // accelerator devices ORT offered through the plugin
  std::string provider_version;             // reported by the plugin, if any
  std::string load_error;                   // dlopen's message when the library cannot be loaded
};

struct GpuDevice {
  std::string vendor;  // "nvidia", "amd", "intel", "apple"
  std::string name;
  std::string driver;  // driver version, "" when unknown
};

struct DiscoveryFacts {
  std::string os;  // "linux", "macos", "windows"
  std::string ort_version;
  std::filesystem::path ort_library_dir;   // where libonnxruntime was loaded from
  std::vector<std::string> ort_providers;  // GetAvailableProviders()
  std::vector<SearchDir> search_dirs;
  std::map<ProviderId, LibraryFacts> libraries;  // providers whose library file was found
  std::vector<GpuDevice> gpus;
  std::string cpu_name;
};

struct ProviderStatus {
  ProviderId id = ProviderId::kCpu;
  bool available = false;
  std::string reason;  // unavailable: why and what to do; available: how it attaches
  std::vector<std::string> devices;
  // A device of the kind this provider drives (a GPU of its vendor) is on this machine: an
  // unavailable provider with one is worth fixing, one without is not.
  bool device_seen = false;
  std::optional<std::filesystem::path> library;  // for attach_provider's plugin path
  CompileEnvironment environment;                // for compiled-graph cache keys
};

// "libonnxruntime_providers_cuda.so" on Linux, ".dylib" on macOS, "onnxruntime_providers_cuda.dll"
// on Windows.
std::string library_file_name(std::string_view stem, std::string_view os);

// One status per provider, in table order.
std::vector<ProviderStatus> assess_providers(const DiscoveryFacts& facts);

// Facts about this process and machine. Registers found provider libraries with ONNX Runtime.
DiscoveryFacts discover_facts();
// discover_facts(), gathered once per process.
const DiscoveryFacts& discovery_facts();
// assess_providers(discovery_facts()), computed once per process.
const std::vector<ProviderStatus>& provider_statuses();
const ProviderStatus& find_status(const std::vector<ProviderStatus>& statuses, ProviderId id);

struct ProviderResolution {
  ProviderId provider = ProviderId::kCpu;  // what sessions use
  std::optional<ProviderId> accelerator;   // set when provider is an accelerator
  std::string problem;                     // auto without accelerator: why
};

// `--provider` against what is available. An explicitly named provider that is unavailable is an
// error quoting the reason; `auto` takes the best available accelerator or falls back to the CPU,
// and says so once through `said_once` when a GPU on this machine goes unused (on a machine
// without one, running on the CPU is no news: it is logged at debug level only).
ProviderResolution resolve_provider(const ProviderChoice& choice,
                                    const std::vector<ProviderStatus>& statuses,
                                    OnceNotices& said_once = notices());

}  // namespace parley::runtime
