#include "runtime/provider_attach.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "core/error.h"
#include "runtime/onnx_session.h"

namespace parley::runtime {
namespace {

std::mutex& registry_mutex() {
  static std::mutex mutex;
  return mutex;
}

std::map<ProviderId, PluginRegistration>& registry() {
  static std::map<ProviderId, PluginRegistration> registrations;
  return registrations;
}

std::unordered_map<std::string, std::string> to_unordered(const ProviderOptions& options) {
  return {options.begin(), options.end()};
}

int device_index(const ProviderOptions& options) {
  auto it = options.find("device_id");
  if (it == options.end()) return 0;
  try {
    std::size_t used = 0;
    const int index = std::stoi(it->second, &used);
    if (used == it->second.size() && index >= 0) return index;
  } catch (const std::exception&) {
  }
  fail("provider_options device_id={}: expected a device number (0, 1, ...)", it->second);
}

std::string value_or_empty(const Ort::ConstKeyValuePairs& pairs, const char* key) {
  if (pairs == nullptr) return {};
  const char* value = pairs.GetValue(key);
  return value != nullptr ? std::string(value) : std::string();
}

std::vector<Ort::ConstEpDevice> matching_devices(ProviderId provider) {
  std::vector<Ort::ConstEpDevice> devices;
  const auto ort_name = traits(provider).ort_name;
  for (const auto& device : ort_env().GetEpDevices()) {
    if (ort_name == device.EpName()) devices.push_back(device);
  }
  return devices;
}

EpDeviceInfo describe(const Ort::ConstEpDevice& device) {
  EpDeviceInfo info;
  const auto hardware = device.Device();
  const char* type = "CPU";
  if (hardware.Type() == OrtHardwareDeviceType_GPU) type = "GPU";
  if (hardware.Type() == OrtHardwareDeviceType_NPU) type = "NPU";
  info.is_gpu = hardware.Type() != OrtHardwareDeviceType_CPU;
  std::string description = value_or_empty(hardware.Metadata(), "Description");
  if (description.empty()) {
    description = fmt::format("{} {} (0x{:04x}:0x{:04x})", hardware.Vendor(), type,
                              hardware.VendorId(), hardware.DeviceId());
  }
  info.description = std::move(description);
  info.ep_version = value_or_empty(device.EpMetadata(), "version");
  info.driver_version = value_or_empty(device.EpMetadata(), "os_driver_version");
  return info;
}

// The plugin path: ORT picks the EP from the devices the library offers.
AttachResult attach_plugin(Ort::SessionOptions& session_options, ProviderId provider,
                           const ProviderOptions& options, const PluginRegistration& registration) {
  auto devices = matching_devices(provider);
  if (devices.empty()) {
    fail("{}: {} registered but offers no device (is the driver loaded and a device present?)",
         provider_name(provider), registration.library.string());
  }
  // Accelerator devices first; device_id counts among them.
  std::vector<Ort::ConstEpDevice> ordered;
  for (const auto& device : devices) {
    if (device.Device().Type() != OrtHardwareDeviceType_CPU) ordered.push_back(device);
  }
  for (const auto& device : devices) {
    if (device.Device().Type() == OrtHardwareDeviceType_CPU) ordered.push_back(device);
  }
  const int index = device_index(options);
  if (static_cast<std::size_t>(index) >= ordered.size()) {
    fail("provider_options device_id={}: {} offers {} device(s) (0..{})", index,
         provider_name(provider), ordered.size(), ordered.size() - 1);
  }
  const auto chosen = ordered[static_cast<std::size_t>(index)];
  session_options.AppendExecutionProvider_V2(ort_env(), {chosen}, to_unordered(options));
  return {provider, fmt::format("plugin library {} (device {}: {})", registration.library.string(),
                                index, describe(chosen).description)};
}

struct CudaOptionsDeleter {
  void operator()(OrtCUDAProviderOptionsV2* options) const {
    Ort::GetApi().ReleaseCUDAProviderOptions(options);
  }
};
struct TensorRtOptionsDeleter {
  void operator()(OrtTensorRTProviderOptionsV2* options) const {
    Ort::GetApi().ReleaseTensorRTProviderOptions(options);
  }
};

void split_options(const ProviderOptions& options, std::vector<const char*>& keys,
                   std::vector<const char*>& values) {
  for (const auto& [key, value] : options) {
    keys.push_back(key.c_str());
    values.push_back(value.c_str());
  }
}

void attach_cuda_legacy(Ort::SessionOptions& session_options, const ProviderOptions& options) {
  OrtCUDAProviderOptionsV2* raw = nullptr;
  Ort::ThrowOnError(Ort::GetApi().CreateCUDAProviderOptions(&raw));
  std::unique_ptr<OrtCUDAProviderOptionsV2, CudaOptionsDeleter> cuda(raw);
  std::vector<const char*> keys, values;
  split_options(options, keys, values);
  Ort::ThrowOnError(
      Ort::GetApi().UpdateCUDAProviderOptions(cuda.get(), keys.data(), values.data(), keys.size()));
  session_options.AppendExecutionProvider_CUDA_V2(*cuda);
}

void attach_tensorrt_legacy(Ort::SessionOptions& session_options, const ProviderOptions& options) {
  OrtTensorRTProviderOptionsV2* raw = nullptr;
  Ort::ThrowOnError(Ort::GetApi().CreateTensorRTProviderOptions(&raw));
  std::unique_ptr<OrtTensorRTProviderOptionsV2, TensorRtOptionsDeleter> tensorrt(raw);
  std::vector<const char*> keys, values;
  split_options(options, keys, values);
  Ort::ThrowOnError(Ort::GetApi().UpdateTensorRTProviderOptions(tensorrt.get(), keys.data(),
                                                                values.data(), keys.size()));
  session_options.AppendExecutionProvider_TensorRT_V2(*tensorrt);
}

int parse_flag(const std::string& key, const std::string& value) {
  if (value == "1" || value == "true" || value == "True") return 1;
  if (value == "0" || value == "false" || value == "False") return 0;
  fail("provider_options {}={}: expected 0 or 1", key, value);
}

std::size_t parse_size(const std::string& key, const std::string& value) {
  try {
    std::size_t used = 0;
    const auto size = std::stoull(value, &used);
    if (used == value.size()) return static_cast<std::size_t>(size);
  } catch (const std::exception&) {
  }
  fail("provider_options {}={}: expected a byte count", key, value);
}

int parse_arena_strategy(const std::string& key, const std::string& value) {
  if (value == "kNextPowerOfTwo" || value == "0") return 0;
  if (value == "kSameAsRequested" || value == "1") return 1;
  fail("provider_options {}={}: expected kNextPowerOfTwo or kSameAsRequested", key, value);
}

// Older ONNX Runtime builds know MIGraphX only through its options struct.
void attach_migraphx_struct(Ort::SessionOptions& session_options, const ProviderOptions& options) {
  OrtMIGraphXProviderOptions migraphx{};
  migraphx.migraphx_mem_limit = SIZE_MAX;
  std::vector<std::string> unsupported;
  for (const auto& [key, value] : options) {
    if (key == "device_id") {
      migraphx.device_id = device_index(options);
    } else if (key == "migraphx_fp16_enable") {
      migraphx.migraphx_fp16_enable = parse_flag(key, value);
    } else if (key == "migraphx_int8_enable") {
      migraphx.migraphx_int8_enable = parse_flag(key, value);
    } else if (key == "migraphx_exhaustive_tune") {
      migraphx.migraphx_exhaustive_tune = parse_flag(key, value) != 0;
    } else if (key == "migraphx_save_compiled_model") {
      migraphx.migraphx_save_compiled_model = parse_flag(key, value);
    } else if (key == "migraphx_save_compiled_path") {
      migraphx.migraphx_save_model_path = value.c_str();
    } else if (key == "migraphx_load_compiled_model") {
      migraphx.migraphx_load_compiled_model = parse_flag(key, value);
    } else if (key == "migraphx_load_compiled_path") {
      migraphx.migraphx_load_model_path = value.c_str();
    } else if (key == "migraphx_arena_extend_strategy" || key == "arena_extend_strategy") {
      migraphx.migraphx_arena_extend_strategy = parse_arena_strategy(key, value);
    } else if (key == "migraphx_mem_limit") {
      migraphx.migraphx_mem_limit = parse_size(key, value);
    } else {
      unsupported.push_back(key);
    }
  }
  if (!unsupported.empty()) {
    fail(
        "migraphx: this ONNX Runtime takes MIGraphX options only through its legacy struct, "
        "which has no field for {} (drop those provider_options or upgrade ONNX "
        "Runtime to 1.23 or newer)",
        fmt::join(unsupported, ", "));
  }
  session_options.AppendExecutionProvider_MIGraphX(migraphx);
}

void attach_rocm_legacy(Ort::SessionOptions& session_options, const ProviderOptions& options) {
  OrtROCMProviderOptions rocm{};
  std::vector<std::string> unsupported;
  for (const auto& [key, value] : options) {
    if (key == "device_id") {
      rocm.device_id = device_index(options);
    } else if (key == "arena_extend_strategy") {
      rocm.arena_extend_strategy = parse_arena_strategy(key, value);
    } else if (key == "gpu_mem_limit") {
      rocm.gpu_mem_limit = parse_size(key, value);
    } else {
      unsupported.push_back(key);
    }
  }
  if (!unsupported.empty()) {
    fail(
        "rocm: the ROCm options struct has no field for {} (supported: device_id, "
        "arena_extend_strategy, gpu_mem_limit)",
        fmt::join(unsupported, ", "));
  }
  session_options.AppendExecutionProvider_ROCM(rocm);
}

std::string attach_legacy(Ort::SessionOptions& session_options, ProviderId provider,
                          const ProviderOptions& options) {
  const auto& provider_traits = traits(provider);
  switch (provider_traits.legacy_attach) {
    case LegacyAttach::kNone:
      return "built in";
    case LegacyAttach::kCudaV2:
      attach_cuda_legacy(session_options, options);
      return "legacy SessionOptionsAppendExecutionProvider_CUDA_V2 call";
    case LegacyAttach::kTensorRtV2:
      attach_tensorrt_legacy(session_options, options);
      return "legacy SessionOptionsAppendExecutionProvider_TensorRT_V2 call";
    case LegacyAttach::kMigraphx:
      try {
        session_options.AppendExecutionProvider(std::string(provider_traits.legacy_name),
                                                to_unordered(options));
        return "legacy SessionOptionsAppendExecutionProvider(\"MIGraphX\") call";
      } catch (const Ort::Exception&) {
        // Builds before the generic call knew MIGraphX: its options struct loads the library.
        attach_migraphx_struct(session_options, options);
        return "legacy SessionOptionsAppendExecutionProvider_MIGraphX call";
      }
    case LegacyAttach::kRocm:
      attach_rocm_legacy(session_options, options);
      return "legacy SessionOptionsAppendExecutionProvider_ROCM call";
    case LegacyAttach::kOpenVinoV2:
      session_options.AppendExecutionProvider_OpenVINO_V2(to_unordered(options));
      return "legacy SessionOptionsAppendExecutionProvider_OpenVINO_V2 call";
    case LegacyAttach::kByName:
      session_options.AppendExecutionProvider(std::string(provider_traits.legacy_name),
                                              to_unordered(options));
      return fmt::format("legacy SessionOptionsAppendExecutionProvider(\"{}\") call",
                         provider_traits.legacy_name);
  }
  return "built in";
}

}  // namespace

PluginRegistration register_plugin_library(ProviderId provider,
                                           const std::filesystem::path& library) {
  std::lock_guard lock(registry_mutex());
  auto it = registry().find(provider);
  if (it != registry().end()) return it->second;
  PluginRegistration registration;
  registration.library = library;
  try {
    ort_env().RegisterExecutionProviderLibrary(std::string(provider_name(provider)).c_str(),
                                               library.native());
    registration.registered = true;
  } catch (const Ort::Exception& error) {
    registration.error = error.what();
  }
  registry().emplace(provider, registration);
  return registration;
}

std::vector<ProviderId> unregister_plugin_libraries() {
  std::lock_guard lock(registry_mutex());
  std::vector<ProviderId> unregistered;
  for (const auto& [provider, registration] : registry()) {
    if (!registration.registered) continue;
    try {
      ort_env().UnregisterExecutionProviderLibrary(std::string(provider_name(provider)).c_str());
      unregistered.push_back(provider);
    } catch (const std::exception& error) {
      spdlog::debug("{}: unregistering {} failed: {}", provider_name(provider),
                    registration.library.string(), error.what());
    }
  }
  registry().clear();
  return unregistered;
}

std::vector<EpDeviceInfo> ep_devices_for(ProviderId provider) {
  std::vector<EpDeviceInfo> devices;
  try {
    for (const auto& device : matching_devices(provider)) devices.push_back(describe(device));
  } catch (const Ort::Exception&) {
    // No device list is no device; discovery explains.
  }
  return devices;
}

ProviderOptions static_shape_options(ProviderId provider, const std::vector<InputShape>& shapes) {
  if (provider != ProviderId::kTensorRt || shapes.empty()) return {};
  std::vector<std::string> parts;
  for (const auto& shape : shapes) {
    parts.push_back(fmt::format("{}:{}", shape.name, fmt::join(shape.dims, "x")));
  }
  const std::string profile = fmt::format("{}", fmt::join(parts, ","));
  return {{"trt_profile_min_shapes", profile},
          {"trt_profile_opt_shapes", profile},
          {"trt_profile_max_shapes", profile}};
}

AttachResult attach_provider(Ort::SessionOptions& session_options, ProviderId provider,
                             const ProviderOptions& options,
                             const std::optional<std::filesystem::path>& library) {
  const auto& provider_traits = traits(provider);
  if (provider == ProviderId::kCpu) return {provider, "built in"};
  std::string plugin_problem;
  if (library) {
    const auto registration = register_plugin_library(provider, *library);
    if (registration.registered) {
      try {
        return attach_plugin(session_options, provider, options, registration);
      } catch (const Ort::Exception& error) {
        plugin_problem = fmt::format("plugin library {}: {}", library->string(), error.what());
      }
    } else {
      plugin_problem = fmt::format("plugin library {}: {}", library->string(), registration.error);
    }
  }
  try {
    return {provider, attach_legacy(session_options, provider, options)};
  } catch (const Ort::Exception& error) {
    fail("execution provider {}: ONNX Runtime {} cannot attach {}: {}{} ({})", provider_traits.name,
         Ort::GetVersionString(), provider_traits.ort_name,
         plugin_problem.empty() ? std::string() : plugin_problem + "; legacy call: ", error.what(),
         provider_traits.install_hint);
  }
}

}  // namespace parley::runtime
