#include "cli/provider_options.h"

#include "pipeline/option_table.h"

namespace parley::cli {

void add_provider_options(CLI::App& command, ProviderArguments& arguments) {
  // The option table's flags (pipeline/option_table.h).
  const auto& provider = pipeline::diarization_option("provider");
  arguments.provider = provider.default_value.get<std::string>();
  command.add_option(provider.cli_flag, arguments.provider, provider.help)->capture_default_str();
  const auto& provider_options = pipeline::diarization_option("provider_options");
  command.add_option(provider_options.cli_flag, arguments.provider_options, provider_options.help);
  const auto& gpu = pipeline::diarization_option("force_gpu");
  const auto& cpu = pipeline::diarization_option("force_cpu");
  auto* force_gpu = command.add_flag(gpu.cli_flag, arguments.force_gpu, gpu.help);
  auto* force_cpu = command.add_flag(cpu.cli_flag, arguments.force_cpu, cpu.help);
  force_gpu->excludes(force_cpu);
  force_cpu->excludes(force_gpu);
}

nlohmann::json provider_values(const ProviderArguments& arguments) {
  nlohmann::json values = nlohmann::json::object();
  if (!arguments.provider.empty()) values["provider"] = arguments.provider;
  if (!arguments.provider_options.empty()) values["provider_options"] = arguments.provider_options;
  values["force_gpu"] = arguments.force_gpu;
  values["force_cpu"] = arguments.force_cpu;
  return values;
}

}  // namespace parley::cli
