#pragma once
// The execution-provider flags every model-running command takes, added the same way everywhere:
//   --provider auto|cpu|cuda|tensorrt|migraphx|amdgpu|rocm|coreml|openvino|dml
//   --provider-option key=value   (repeatable; passed to ONNX Runtime)
//   --force-gpu / --force-cpu     (strict: no fallback, no cost model)
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "runtime/placement.h"
#include "runtime/provider.h"

namespace parley::cli {

struct ProviderArguments {
  std::string provider = "auto";
  std::vector<std::string> provider_options;
  bool force_gpu = false;
  bool force_cpu = false;
};

// Adds the four flags to `command`, writing into `arguments` (which must outlive parsing).
void add_provider_options(CLI::App& command, ProviderArguments& arguments);

struct ProviderSelection {
  runtime::ProviderChoice choice;
  runtime::ProviderOptions options;
  runtime::ForceMode force = runtime::ForceMode::kNone;
};

// Validates the flags together (unknown names, malformed options, contradictions such as
// --force-gpu --provider cpu) and canonicalises aliases.
ProviderSelection provider_selection(const ProviderArguments& arguments);

// runtime::ProviderChoice::parse, its error prefixed with `flag` (e.g. "--segmentation-provider").
runtime::ProviderChoice parse_provider_flag(std::string_view flag, const std::string& text);

}  // namespace parley::cli
