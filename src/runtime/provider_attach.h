#pragma once
// Attaching an execution provider to ONNX Runtime session options. When the provider's shared
// library is known, it is registered once per process through ORT's plugin-EP API
// (RegisterExecutionProviderLibrary, GetEpDevices, SessionOptionsAppendExecutionProvider_V2);
// when that is impossible (no library, or a library without the plugin entry points) the legacy
// append call for that provider is used. Failures name what is missing.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <onnxruntime_cxx_api.h>

#include "runtime/provider.h"
#include "runtime/shape_plan.h"

namespace parley::runtime {

struct PluginRegistration {
  bool registered = false;
  std::string error;  // ONNX Runtime's message when registration failed
  std::filesystem::path library;
};

// Registers `library` for `provider` with the process-wide Ort::Env (once; later calls return
// the first outcome).
PluginRegistration register_plugin_library(ProviderId provider,
                                           const std::filesystem::path& library);

// Unregisters every provider library registered above (UnregisterExecutionProviderLibrary),
// while the libraries those providers loaded (CUDA, cuDNN, ...) are still intact. Every session
// must be gone. Returns the providers unregistered; failures are logged, not thrown.
std::vector<ProviderId> unregister_plugin_libraries();

// One device ONNX Runtime offers for a provider.
struct EpDeviceInfo {
  std::string description;     // "NVIDIA (0x10de:0x2330) GPU"
  std::string ep_version;      // provider library version, when it reports one
  std::string driver_version;  // OS driver version, when reported
  bool is_gpu = false;
};
// Devices of `provider` that ONNX Runtime knows (plugin libraries must be registered first).
std::vector<EpDeviceInfo> ep_devices_for(ProviderId provider);

struct AttachResult {
  ProviderId provider = ProviderId::kCpu;
  std::string method;  // "built in", "plugin library ... (device ...)", "legacy ... call"
};

// Attaches `provider` with `options` (already merged with defaults). `library` is the provider
// library found by discovery, if any. Throws parley::Error saying what is missing.
AttachResult attach_provider(Ort::SessionOptions& session_options, ProviderId provider,
                             const ProviderOptions& options,
                             const std::optional<std::filesystem::path>& library);

// Provider options that tell a static-shape provider the exact input shapes up front (TensorRT
// optimisation profiles with min = opt = max); empty for the others or without shapes.
ProviderOptions static_shape_options(ProviderId provider, const std::vector<InputShape>& shapes);

}  // namespace parley::runtime
