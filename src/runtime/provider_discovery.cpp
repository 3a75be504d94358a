#include "runtime/provider_discovery.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <onnxruntime_cxx_api.h>
#include <spdlog/spdlog.h>

#include "core/error.h"
#include "core/executable_path.h"
#include "core/text.h"
#include "runtime/provider_attach.h"

namespace parley::runtime {
namespace fs = std::filesystem;
namespace {

bool contains(const std::vector<std::string_view>& list, std::string_view value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

std::string join_dirs(const std::vector<SearchDir>& dirs) {
  std::vector<std::string> parts;
  for (const auto& dir : dirs)
    parts.push_back(fmt::format("{} ({})", dir.dir.string(), dir.origin));
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::vector<std::string> gpu_names(const DiscoveryFacts& facts, std::string_view vendor) {
  std::vector<std::string> names;
  for (const auto& gpu : facts.gpus) {
    if (vendor == "any" || gpu.vendor == vendor) {
      names.push_back(gpu.driver.empty() ? gpu.name
                                         : fmt::format("{} (driver {})", gpu.name, gpu.driver));
    }
  }
  return names;
}

std::string device_identity(const DiscoveryFacts& facts, std::string_view vendor,
                            const std::vector<std::string>& devices) {
  for (const auto& gpu : facts.gpus) {
    if (vendor == "any" || gpu.vendor == vendor)
      return fmt::format("{} driver {}", gpu.name, gpu.driver);
  }
  return devices.empty() ? std::string("unknown device") : devices.front();
}

ProviderStatus assess_one(const ProviderTraits& provider, const DiscoveryFacts& facts) {
  ProviderStatus status;
  status.id = provider.id;
  status.environment.ort_version = facts.ort_version;
  status.environment.provider_library = "built-in";
  auto unavailable = [&](std::string reason) {
    status.available = false;
    status.reason = std::move(reason);
    return status;
  };
  if (provider.id == ProviderId::kCpu) {
    status.available = true;
    status.reason = "built into ONNX Runtime";
    status.devices = {facts.cpu_name.empty() ? std::string("CPU") : facts.cpu_name};
    status.environment.device = status.devices.front();
    return status;
  }
  status.device_seen = !gpu_names(facts, provider.device_vendor).empty();
  if (!contains(provider.platforms, facts.os)) {
    return unavailable(
        fmt::format("runs only on {} (this is {})", fmt::join(provider.platforms, ", "), facts.os));
  }
  const bool built_in_to_ort = std::find(facts.ort_providers.begin(), facts.ort_providers.end(),
                                         provider.ort_name) != facts.ort_providers.end();
  if (provider.library.empty()) {
    if (!built_in_to_ort) {
      return unavailable(fmt::format("ONNX Runtime {} was built without {} ({})", facts.ort_version,
                                     provider.ort_name, provider.install_hint));
    }
    status.available = true;
    status.reason = "built into ONNX Runtime";
    status.devices = gpu_names(facts, provider.device_vendor);
    if (status.devices.empty()) status.devices = {std::string(provider.device_kind)};
    status.environment.device = device_identity(facts, provider.device_vendor, status.devices);
    return status;
  }
  const std::string file = library_file_name(provider.library, facts.os);
  auto found = facts.libraries.find(provider.id);
  if (found == facts.libraries.end()) {
    if (facts.search_dirs.empty()) {
      return unavailable(
          fmt::format("{} not found (no folder to search: set PARLEY_PROVIDER_PATH) ({})", file,
                      provider.install_hint));
    }
    return unavailable(fmt::format("{} not found in {} ({})", file, join_dirs(facts.search_dirs),
                                   provider.install_hint));
  }
  const LibraryFacts& library = found->second;
  status.library = library.file;
  status.environment.provider_library = library.identity;
  if (!library.load_error.empty()) {
    return unavailable(fmt::format("{} was found but cannot be loaded: {} ({})",
                                   library.file.string(), library.load_error,
                                   provider.install_hint));
  }
  if (library.plugin_registered) {
    if (library.plugin_devices.empty()) {
      return unavailable(fmt::format(
          "{} loads but offers no {} (is the driver installed and the device visible to this "
          "process?)",
          library.file.string(), provider.device_kind));
    }
    status.available = true;
    status.reason = fmt::format("plugin library {}", library.file.string());
    status.devices = library.plugin_devices;
    if (!library.provider_version.empty()) {
      status.environment.provider_library += " version " + library.provider_version;
    }
    status.environment.device = device_identity(facts, provider.device_vendor, status.devices);
    return status;
  }
  // Not a plugin library: only ONNX Runtime's legacy loader can use it, and that loader looks in
  // ONNX Runtime's own folder only.
  std::error_code ec;
  if (!facts.ort_library_dir.empty() &&
      !fs::equivalent(library.file.parent_path(), facts.ort_library_dir, ec)) {
    return unavailable(fmt::format(
        "{} is not a plugin library ({}), and ONNX Runtime loads legacy provider libraries only "
        "from its own folder {} (copy it there)",
        library.file.string(), library.plugin_error, facts.ort_library_dir.string()));
  }
  const auto devices = gpu_names(facts, provider.device_vendor);
  if (devices.empty() && provider.device_vendor != "any") {
    return unavailable(fmt::format("{} is present but no {} was found (is the driver loaded?)",
                                   library.file.string(), provider.device_kind));
  }
  status.available = true;
  status.reason = fmt::format("legacy provider library {}", library.file.string());
  status.devices =
      devices.empty() ? std::vector<std::string>{std::string(provider.device_kind)} : devices;
  status.environment.device = device_identity(facts, provider.device_vendor, status.devices);
  return status;
}

// ---- facts from the running system ----

std::string current_os() {
#if defined(__APPLE__)
  return "macos";
#elif defined(_WIN32)
  return "windows";
#else
  return "linux";
#endif
}

std::string read_first_line(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return std::string(trim(line.substr(colon + 1)));
    }
  }
  return "CPU";
}

std::vector<GpuDevice> linux_gpus() {
  std::vector<GpuDevice> gpus;
  std::error_code ec;
  // NVIDIA: the driver lists each GPU under /proc/driver/nvidia/gpus/<bus id>/information.
  std::string nvidia_driver;
  {
    const std::string version = read_first_line("/proc/driver/nvidia/version");
    std::istringstream words(version);
    std::string word;
    while (words >> word) {
      if (!word.empty() && std::isdigit(static_cast<unsigned char>(word[0])) &&
          word.find('.') != std::string::npos) {
        nvidia_driver = word;
        break;
      }
    }
  }
  std::vector<fs::path> nvidia_dirs;
  for (const auto& entry : fs::directory_iterator("/proc/driver/nvidia/gpus", ec)) {
    nvidia_dirs.push_back(entry.path());
  }
  std::sort(nvidia_dirs.begin(), nvidia_dirs.end());
  for (const auto& dir : nvidia_dirs) {
    std::ifstream info(dir / "information");
    std::string line;
    std::string model = "NVIDIA GPU";
    while (std::getline(info, line)) {
      if (line.rfind("Model:", 0) == 0) model = trim(line.substr(6));
    }
    gpus.push_back({"nvidia", model, nvidia_driver});
  }
  // AMD and Intel: PCI vendor ids of DRM cards.
  std::vector<fs::path> cards;
  for (const auto& entry : fs::directory_iterator("/sys/class/drm", ec)) {
    const auto name = entry.path().filename().string();
    if (name.rfind("card", 0) == 0 && name.find('-') == std::string::npos)
      cards.push_back(entry.path());
  }
  std::sort(cards.begin(), cards.end());
  const std::string amd_driver = read_first_line("/sys/module/amdgpu/version");
  for (const auto& card : cards) {
    const std::string vendor = read_first_line(card / "device" / "vendor");
    const std::string device = read_first_line(card / "device" / "device");
    std::string product(trim(read_first_line(card / "device" / "product_name")));
    if (vendor == "0x1002") {
      gpus.push_back({"amd", product.empty() ? fmt::format("AMD GPU {}", device) : product,
                      amd_driver.empty() ? std::string("amdgpu") : amd_driver});
    } else if (vendor == "0x8086") {
      gpus.push_back(
          {"intel", product.empty() ? fmt::format("Intel GPU {}", device) : product, ""});
    }
  }
  return gpus;
}

fs::path ort_library_dir() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&OrtGetApiBase), &info) != 0 && info.dli_fname != nullptr) {
    std::error_code ec;
    const fs::path library = fs::canonical(info.dli_fname, ec);
    if (!ec) return library.parent_path();
  }
  return {};
}

std::vector<SearchDir> search_dirs(const fs::path& ort_dir) {
  std::vector<SearchDir> dirs;
  auto add_list = [&](const char* variable, const std::string& origin) {
    const char* value = std::getenv(variable);
    if (value == nullptr) return;
    std::stringstream stream(value);
    std::string item;
    while (std::getline(stream, item, ':')) {
      if (!item.empty()) dirs.push_back({item, origin});
    }
  };
  add_list("PARLEY_PROVIDER_PATH", "$PARLEY_PROVIDER_PATH");
  if (!ort_dir.empty()) dirs.push_back({ort_dir, "next to libonnxruntime"});
  if (const fs::path executable = executable_folder(); !executable.empty()) {
    dirs.push_back({executable, "next to the parley executable"});
    dirs.push_back({executable.parent_path() / "lib", "parley's lib folder"});
  }
  add_list("LD_LIBRARY_PATH", "$LD_LIBRARY_PATH");
  // The same folder reached twice is searched (and reported) once; folders that do not exist are
  // left out unless the user named them.
  std::vector<SearchDir> unique;
  for (auto& dir : dirs) {
    std::error_code exists_ec;
    if (!fs::is_directory(dir.dir, exists_ec)) {
      if (dir.origin != "$PARLEY_PROVIDER_PATH") continue;
      dir.origin += ", does not exist";
    }
    const bool seen = std::any_of(unique.begin(), unique.end(), [&](const SearchDir& other) {
      std::error_code equivalent_ec;
      return other.dir == dir.dir || fs::equivalent(other.dir, dir.dir, equivalent_ec);
    });
    if (!seen) unique.push_back(std::move(dir));
  }
  return unique;
}

std::string file_identity(const fs::path& file) {
  std::error_code ec;
  const auto size = fs::file_size(file, ec);
  const auto modified = fs::last_write_time(file, ec);
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(
                           std::chrono::file_clock::to_sys(modified).time_since_epoch())
                           .count();
  return fmt::format("{} {} bytes mtime {}", file.filename().string(), size, seconds);
}

std::string dlopen_error(const fs::path& file) {
  void* handle = ::dlopen(file.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = ::dlerror();
    return error != nullptr ? std::string(error) : std::string("dlopen failed");
  }
  ::dlclose(handle);
  return {};
}

}  // namespace

std::string library_file_name(std::string_view stem, std::string_view os) {
  if (os == "windows") return fmt::format("{}.dll", stem);
  if (os == "macos") return fmt::format("lib{}.dylib", stem);
  return fmt::format("lib{}.so", stem);
}

std::vector<ProviderStatus> assess_providers(const DiscoveryFacts& facts) {
  std::vector<ProviderStatus> statuses;
  for (const auto& provider : all_provider_traits())
    statuses.push_back(assess_one(provider, facts));
  return statuses;
}

DiscoveryFacts discover_facts() {
  DiscoveryFacts facts;
  facts.os = current_os();
  facts.ort_version = Ort::GetVersionString();
  facts.ort_providers = Ort::GetAvailableProviders();
  facts.ort_library_dir = ort_library_dir();
  facts.search_dirs = search_dirs(facts.ort_library_dir);
  facts.cpu_name = cpu_model_name();
  if (facts.os == "linux") facts.gpus = linux_gpus();
  for (const auto& provider : all_provider_traits()) {
    if (provider.library.empty() || !contains(provider.platforms, facts.os)) continue;
    const std::string file = library_file_name(provider.library, facts.os);
    for (const auto& dir : facts.search_dirs) {
      std::error_code ec;
      if (!fs::is_regular_file(dir.dir / file, ec)) continue;
      LibraryFacts library;
      library.file = dir.dir / file;
      library.origin = dir.origin;
      library.identity = file_identity(library.file);
      const auto registration = register_plugin_library(provider.id, library.file);
      library.plugin_registered = registration.registered;
      library.plugin_error = registration.error;
      if (registration.registered) {
        for (const auto& device : ep_devices_for(provider.id)) {
          if (!device.is_gpu && provider.device_vendor != "any") continue;
          library.plugin_devices.push_back(
              device.driver_version.empty()
                  ? device.description
                  : fmt::format("{} (driver {})", device.description, device.driver_version));
          if (library.provider_version.empty()) library.provider_version = device.ep_version;
        }
      } else {
        library.load_error = dlopen_error(library.file);
      }
      facts.libraries.emplace(provider.id, std::move(library));
      break;
    }
  }
  return facts;
}

const DiscoveryFacts& discovery_facts() {
  static const DiscoveryFacts facts = discover_facts();
  return facts;
}

const std::vector<ProviderStatus>& provider_statuses() {
  static const std::vector<ProviderStatus> statuses = assess_providers(discovery_facts());
  return statuses;
}

const ProviderStatus& find_status(const std::vector<ProviderStatus>& statuses, ProviderId id) {
  for (const auto& status : statuses) {
    if (status.id == id) return status;
  }
  fail("no status for provider {}", provider_name(id));
}

ProviderResolution resolve_provider(const ProviderChoice& choice,
                                    const std::vector<ProviderStatus>& statuses,
                                    OnceNotices& said_once) {
  ProviderResolution resolution;
  if (!choice.automatic) {
    const auto& status = find_status(statuses, choice.provider);
    if (!status.available) {
      fail(
          "execution provider {}: unavailable: {} (`parley providers` lists what this machine can "
          "use)",
          provider_name(choice.provider), status.reason);
    }
    resolution.provider = choice.provider;
    if (traits(choice.provider).accelerator) resolution.accelerator = choice.provider;
    return resolution;
  }
  std::vector<std::string> problems;
  for (ProviderId candidate : auto_candidates()) {
    const auto& status = find_status(statuses, candidate);
    if (status.available) {
      resolution.provider = candidate;
      resolution.accelerator = candidate;
      return resolution;
    }
    // Providers that cannot exist on this OS are noise in the explanation.
    if (status.reason.rfind("runs only on", 0) != 0) {
      problems.push_back(fmt::format("{}: {}", provider_name(candidate), status.reason));
    }
  }
  resolution.provider = ProviderId::kCpu;
  resolution.problem = problems.empty() ? std::string("no GPU provider exists for this platform")
                                        : fmt::format("{}", fmt::join(problems, "; "));
  const bool gpu_unused = std::any_of(
      statuses.begin(), statuses.end(),
      [](const ProviderStatus& status) { return !status.available && status.device_seen; });
  if (gpu_unused) {
    said_once.say(
        "automatic provider choice: this machine has a GPU but no GPU provider can use it, "
        "running on the CPU (`parley providers` says why and what to install)");
  } else {
    // Once per process, as the warning is: placement resolves the provider per model and call.
    static OnceNotices debug_once([](const std::string& message) { spdlog::debug("{}", message); });
    debug_once.say(fmt::format("automatic provider choice: no GPU here, running on the CPU ({})",
                               resolution.problem));
  }
  return resolution;
}

}  // namespace parley::runtime
