#include "runtime/provider.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "core/error.h"
#include "core/text.h"

namespace parley::runtime {
namespace {

std::string lower(std::string_view text) {
  std::string result(text);
  std::transform(result.begin(), result.end(), result.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return result;
}

const std::vector<ProviderTraits>& table() {
  // Order is the order `parley providers` lists them in. auto_priority says which accelerator
  // `auto` prefers; TensorRT and OpenVINO are left to explicit requests because TensorRT spends
  // minutes building engines and OpenVINO mostly runs on the same CPU.
  static const std::vector<ProviderTraits> providers = {
      {.id = ProviderId::kCpu,
       .name = "cpu",
       .aliases = {},
       .ort_name = "CPUExecutionProvider",
       .legacy_name = "",
       .library = "",
       .device_kind = "host CPU",
       .device_vendor = "cpu",
       .platforms = {"linux", "macos", "windows"},
       .accelerator = false,
       .static_shapes = false,
       .graph_capture = false,
       .graph_capture_option = "",
       .reduced_precision_option = "",
       .concurrent_runs = true,
       .cache_kind = CompiledCacheKind::kNone,
       .legacy_attach = LegacyAttach::kNone,
       .auto_priority = 0,
       .default_options = {},
       .install_hint = ""},
      {.id = ProviderId::kCuda,
       .name = "cuda",
       .aliases = {"nvidia"},
       .ort_name = "CUDAExecutionProvider",
       .legacy_name = "CUDA",
       .library = "onnxruntime_providers_cuda",
       .device_kind = "NVIDIA GPU",
       .device_vendor = "nvidia",
       .platforms = {"linux", "windows"},
       .accelerator = true,
       .static_shapes = false,
       .graph_capture = true,
       .graph_capture_option = "enable_cuda_graph",
       .reduced_precision_option = "use_tf32",
       .concurrent_runs = true,
       .cache_kind = CompiledCacheKind::kNone,
       .legacy_attach = LegacyAttach::kCudaV2,
       .auto_priority = 1,
       // An arena that grows by what is asked for: far less device memory than ORT's default
       // (next power of two) at the same speed (docs/providers.md, "In the pipeline").
       .default_options = {{"device_id", "0"}, {"arena_extend_strategy", "kSameAsRequested"}},
       .install_hint = "install the GPU build of ONNX Runtime with CUDA 12/13 and cuDNN 9, or set "
                       "PARLEY_PROVIDER_PATH to the folder holding its provider libraries"},
      {.id = ProviderId::kTensorRt,
       .name = "tensorrt",
       .aliases = {"trt"},
       .ort_name = "TensorrtExecutionProvider",
       .legacy_name = "TensorRT",
       .library = "onnxruntime_providers_tensorrt",
       .device_kind = "NVIDIA GPU",
       .device_vendor = "nvidia",
       .platforms = {"linux", "windows"},
       .accelerator = true,
       .static_shapes = true,
       .graph_capture = true,
       .graph_capture_option = "trt_cuda_graph_enable",
       .reduced_precision_option = "",
       .concurrent_runs = false,
       .cache_kind = CompiledCacheKind::kTensorRtEngine,
       .legacy_attach = LegacyAttach::kTensorRtV2,
       .auto_priority = 0,
       .default_options = {{"device_id", "0"}},
       .install_hint = "install the GPU build of ONNX Runtime and TensorRT 10 (libnvinfer), or set "
                       "PARLEY_PROVIDER_PATH to the folder holding its provider libraries"},
      {.id = ProviderId::kMigraphx,
       .name = "migraphx",
       .aliases = {"amdgpu"},
       .ort_name = "MIGraphXExecutionProvider",
       .legacy_name = "MIGraphX",
       .library = "onnxruntime_providers_migraphx",
       .device_kind = "AMD GPU",
       .device_vendor = "amd",
       .platforms = {"linux", "windows"},
       .accelerator = true,
       .static_shapes = true,
       .graph_capture = false,
       .graph_capture_option = "",
       .reduced_precision_option = "",
       .concurrent_runs = false,
       .cache_kind = CompiledCacheKind::kMigraphxProgram,
       .legacy_attach = LegacyAttach::kMigraphx,
       .auto_priority = 2,
       // Device 0 and an arena that grows by what is asked for: the default (next power of
       // two) can claim twice the memory a batch needs.
       .default_options = {{"device_id", "0"},
                           {"migraphx_arena_extend_strategy", "kSameAsRequested"}},
       .install_hint = "install ROCm with MIGraphX and the MIGraphX build of ONNX Runtime, or set "
                       "PARLEY_PROVIDER_PATH to the folder holding its provider libraries"},
      {.id = ProviderId::kRocm,
       .name = "rocm",
       .aliases = {"hip"},
       .ort_name = "ROCMExecutionProvider",
       .legacy_name = "ROCM",
       .library = "onnxruntime_providers_rocm",
       .device_kind = "AMD GPU",
       .device_vendor = "amd",
       .platforms = {"linux"},
       .accelerator = true,
       .static_shapes = false,
       .graph_capture = true,
       .graph_capture_option = "enable_hip_graph",
       .reduced_precision_option = "",
       .concurrent_runs = true,
       .cache_kind = CompiledCacheKind::kNone,
       .legacy_attach = LegacyAttach::kRocm,
       .auto_priority = 3,
       .default_options = {{"device_id", "0"}},
       .install_hint =
           "ONNX Runtime dropped the ROCm provider after 1.22; use the migraphx provider, "
           "or an ONNX Runtime 1.22 ROCm build"},
      {.id = ProviderId::kCoreMl,
       .name = "coreml",
       .aliases = {"apple", "ane"},
       .ort_name = "CoreMLExecutionProvider",
       .legacy_name = "CoreML",
       .library = "",
       .device_kind = "Apple GPU / Neural Engine",
       .device_vendor = "apple",
       .platforms = {"macos"},
       .accelerator = true,
       .static_shapes = true,
       .graph_capture = false,
       .graph_capture_option = "",
       .reduced_precision_option = "",
       .concurrent_runs = false,
       .cache_kind = CompiledCacheKind::kCoreMlModel,
       .legacy_attach = LegacyAttach::kByName,
       .auto_priority = 4,
       .default_options = {{"ModelFormat", "MLProgram"}},
       .install_hint = "use the macOS build of ONNX Runtime (CoreML is part of it)"},
      {.id = ProviderId::kOpenVino,
       .name = "openvino",
       .aliases = {"intel"},
       .ort_name = "OpenVINOExecutionProvider",
       .legacy_name = "OpenVINO",
       .library = "onnxruntime_providers_openvino",
       .device_kind = "Intel CPU / GPU / NPU",
       .device_vendor = "any",
       .platforms = {"linux", "windows"},
       .accelerator = true,
       .static_shapes = false,
       .graph_capture = false,
       .graph_capture_option = "",
       .reduced_precision_option = "",
       .concurrent_runs = false,
       .cache_kind = CompiledCacheKind::kOpenVinoBlob,
       .legacy_attach = LegacyAttach::kOpenVinoV2,
       .auto_priority = 0,
       .default_options = {},
       .install_hint =
           "install the OpenVINO build of ONNX Runtime and the OpenVINO runtime, or set "
           "PARLEY_PROVIDER_PATH to the folder holding its provider libraries"},
      {.id = ProviderId::kDml,
       .name = "dml",
       .aliases = {"directml"},
       .ort_name = "DmlExecutionProvider",
       .legacy_name = "DML",
       .library = "",
       .device_kind = "DirectX 12 GPU",
       .device_vendor = "any",
       .platforms = {"windows"},
       .accelerator = true,
       .static_shapes = false,
       .graph_capture = true,
       .graph_capture_option = "ep.dml.enable_graph_capture",
       .reduced_precision_option = "",
       .concurrent_runs = false,
       .cache_kind = CompiledCacheKind::kNone,
       .legacy_attach = LegacyAttach::kByName,
       .auto_priority = 5,
       .default_options = {{"device_id", "0"}},
       .install_hint = "use the DirectML build of ONNX Runtime on Windows"},
  };
  return providers;
}

}  // namespace

std::span<const ProviderTraits> all_provider_traits() { return table(); }

const ProviderTraits& traits(ProviderId id) {
  for (const auto& entry : table()) {
    if (entry.id == id) return entry;
  }
  fail("provider id {} has no traits entry (add it to the table in runtime/provider.cpp)",
       static_cast<int>(id));
}

std::string_view provider_name(ProviderId id) { return traits(id).name; }

std::optional<ProviderId> find_provider(std::string_view text) {
  const std::string wanted = lower(trim(text));
  if (wanted.empty()) return std::nullopt;
  for (const auto& entry : table()) {
    if (wanted == entry.name || wanted == lower(entry.ort_name)) return entry.id;
    for (auto alias : entry.aliases) {
      if (wanted == alias) return entry.id;
    }
  }
  return std::nullopt;
}

std::optional<ProviderId> provider_from_ort_name(std::string_view ort_name) {
  for (const auto& entry : table()) {
    if (ort_name == entry.ort_name) return entry.id;
  }
  return std::nullopt;
}

std::string valid_provider_names() {
  std::string names = "auto";
  for (const auto& entry : table()) {
    names += ", ";
    names += entry.name;
    if (!entry.aliases.empty()) {
      names += " (alias ";
      for (std::size_t i = 0; i < entry.aliases.size(); ++i) {
        if (i > 0) names += ", ";
        names += entry.aliases[i];
      }
      names += ")";
    }
  }
  return names;
}

ProviderId parse_provider(std::string_view text) {
  if (auto id = find_provider(text)) return *id;
  if (lower(trim(text)) == "auto") {
    fail(
        "provider 'auto' is not a provider here: a single execution provider is needed; valid "
        "names: {}",
        valid_provider_names());
  }
  fail("unknown execution provider '{}'; valid names: {}", text, valid_provider_names());
}

ProviderChoice ProviderChoice::parse(std::string_view text) {
  if (lower(trim(text)) == "auto") return ProviderChoice{};
  if (auto id = find_provider(text)) return ProviderChoice{.automatic = false, .provider = *id};
  fail("unknown execution provider '{}'; valid names: {}", text, valid_provider_names());
}

std::string ProviderChoice::to_string() const {
  return automatic ? std::string("auto") : std::string(provider_name(provider));
}

std::vector<ProviderId> auto_candidates() {
  std::vector<const ProviderTraits*> ranked;
  for (const auto& entry : table()) {
    if (entry.auto_priority > 0) ranked.push_back(&entry);
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto* a, const auto* b) {
    return a->auto_priority < b->auto_priority;
  });
  std::vector<ProviderId> ids;
  for (const auto* entry : ranked) ids.push_back(entry->id);
  return ids;
}

std::pair<std::string, std::string> parse_provider_option(std::string_view text) {
  const auto equals = text.find('=');
  if (equals == std::string_view::npos) {
    fail("provider_options entry '{}': expected key=value (e.g. device_id=1)", text);
  }
  std::string key(trim(text.substr(0, equals)));
  std::string value(trim(text.substr(equals + 1)));
  if (key.empty() || value.empty()) {
    fail("provider_options entry '{}': key and value must both be non-empty (e.g. device_id=1)",
         text);
  }
  return {std::move(key), std::move(value)};
}

ProviderOptions parse_provider_options(const std::vector<std::string>& texts) {
  ProviderOptions options;
  for (const auto& text : texts) {
    auto [key, value] = parse_provider_option(text);
    options.insert_or_assign(std::move(key), std::move(value));
  }
  return options;
}

ProviderOptions effective_options(ProviderId id, const ProviderOptions& user_options) {
  ProviderOptions options = traits(id).default_options;
  for (const auto& [key, value] : user_options) options[key] = value;
  return options;
}

}  // namespace parley::runtime
