#pragma once
// The execution-provider flags every model-running command takes, added the same way everywhere:
//   --provider auto|cpu|cuda|tensorrt|migraphx|amdgpu|rocm|coreml|openvino|dml
//   --provider-option key=value   (repeatable; passed to ONNX Runtime)
//   --force-gpu / --force-cpu     (strict: no fallback, no cost model)
// Only the flags: what they mean together (contradictions, aliases, options a provider cannot
// take) is the engine's (pipeline::provider_placement), as for every face.
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

namespace parley::cli {

struct ProviderArguments {
  std::string provider = "auto";
  std::vector<std::string> provider_options;
  bool force_gpu = false;
  bool force_cpu = false;
};

// Adds the four flags to `command`, writing into `arguments` (which must outlive parsing).
void add_provider_options(CLI::App& command, ProviderArguments& arguments);

// The flags as option values by the option table's names (pipeline/option_values.h).
nlohmann::json provider_values(const ProviderArguments& arguments);

}  // namespace parley::cli
