#pragma once
// Execution providers by one canonical name each, and the traits table that the rest of the
// runtime (attach, discovery, shape planning, compiled-graph cache, placement) reads. Adding a
// provider means adding one row to the table in provider.cpp.
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace parley::runtime {

enum class ProviderId { kCpu, kCuda, kTensorRt, kMigraphx, kRocm, kCoreMl, kOpenVino, kDml };

// How a provider stores what it compiled, so a later run can skip compilation.
enum class CompiledCacheKind {
  kNone,             // nothing to cache (CPU, CUDA: kernels are chosen at run time)
  kMigraphxProgram,  // MIGraphX compiled programs (.mxr)
  kTensorRtEngine,   // TensorRT engines plus the timing cache
  kCoreMlModel,      // CoreML compiled model directory
  kOpenVinoBlob,     // OpenVINO compiled blobs
};

// Which ONNX Runtime call attaches the provider when no plugin library can be registered.
enum class LegacyAttach {
  kNone,        // the CPU provider is always present
  kCudaV2,      // SessionOptionsAppendExecutionProvider_CUDA_V2 with string options
  kTensorRtV2,  // SessionOptionsAppendExecutionProvider_TensorRT_V2 with string options
  kMigraphx,    // SessionOptionsAppendExecutionProvider("MIGraphX"), else the options struct
  kRocm,        // SessionOptionsAppendExecutionProvider_ROCM (options struct)
  kOpenVinoV2,  // SessionOptionsAppendExecutionProvider_OpenVINO_V2
  kByName,      // SessionOptionsAppendExecutionProvider(legacy_name, options)
};

using ProviderOptions = std::map<std::string, std::string>;

struct ProviderTraits {
  ProviderId id;
  std::string_view name;  // canonical: what logs, `parley providers` and JSON show
  std::vector<std::string_view> aliases;
  std::string_view ort_name;     // ONNX Runtime's name, e.g. "CUDAExecutionProvider"
  std::string_view legacy_name;  // name for the generic append call (kByName/kMigraphx)
  // Shared-library stem (libonnxruntime_providers_cuda.so -> "onnxruntime_providers_cuda");
  // empty when the provider is compiled into libonnxruntime itself.
  std::string_view library;
  std::string_view device_kind;             // what it runs on, for humans
  std::string_view device_vendor;           // "nvidia", "amd", "apple", "intel", "any", "cpu"
  std::vector<std::string_view> platforms;  // "linux", "macos", "windows"
  bool accelerator = false;    // runs off the host CPU (placement treats it as "the GPU")
  bool static_shapes = false;  // compiles one graph per input shape: pad inputs to buckets
  bool graph_capture = false;  // can replay a captured graph (CUDA graphs and the like)
  std::string_view graph_capture_option;  // provider option that turns it on
  // Provider option that, set to "0", keeps float32 arithmetic at full precision (CUDA's TF32
  // tensor-core mode rounds products to 10-bit mantissas); empty where there is none.
  std::string_view reduced_precision_option;
  // Run() may be called on one session from several threads at once, each run on a device
  // stream of its own (ONNX Runtime's CPU, CUDA and ROCm providers; DirectML allows one Run at a
  // time). runtime/session_share.h shares only such sessions.
  bool concurrent_runs = false;
  CompiledCacheKind cache_kind = CompiledCacheKind::kNone;
  LegacyAttach legacy_attach = LegacyAttach::kNone;
  int auto_priority = 0;  // 1 = auto tries it first; 0 = only when asked for by name
  ProviderOptions default_options;
  std::string_view install_hint;  // what to do when it is unavailable
};

// Every provider, in table order (CPU first).
std::span<const ProviderTraits> all_provider_traits();
const ProviderTraits& traits(ProviderId id);
std::string_view provider_name(ProviderId id);

// Parses a provider name or alias, case-insensitively ("amdgpu" -> kMigraphx, ONNX Runtime
// names such as "CUDAExecutionProvider" too); throws parley::Error listing the valid names.
ProviderId parse_provider(std::string_view text);
std::optional<ProviderId> find_provider(std::string_view text);
// Maps ONNX Runtime's provider name ("MIGraphXExecutionProvider") to ours.
std::optional<ProviderId> provider_from_ort_name(std::string_view ort_name);

// `--provider` accepts `auto` or a provider.
struct ProviderChoice {
  bool automatic = true;
  ProviderId provider = ProviderId::kCpu;  // meaningful when !automatic

  static ProviderChoice parse(std::string_view text);
  std::string to_string() const;
  bool operator==(const ProviderChoice&) const = default;
};

// "auto, cpu, cuda, tensorrt, migraphx (alias amdgpu), ..." for help texts and errors.
std::string valid_provider_names();

// Accelerators that `auto` considers, best first.
std::vector<ProviderId> auto_candidates();

// "key=value" -> (key, value); throws naming the flag when malformed.
std::pair<std::string, std::string> parse_provider_option(std::string_view text);
// Every "key=value" of a repeated --provider-option; a later key replaces an earlier one.
ProviderOptions parse_provider_options(const std::vector<std::string>& texts);
// Defaults of the provider, overridden by the user's options; keys are passed to ONNX Runtime
// unchanged.
ProviderOptions effective_options(ProviderId id, const ProviderOptions& user_options);

}  // namespace parley::runtime
