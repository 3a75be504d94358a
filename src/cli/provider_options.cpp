#include "cli/provider_options.h"

#include "cli/flag_names.h"
#include "core/error.h"
#include "pipeline/network_placement.h"
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

runtime::ProviderChoice parse_provider_flag(std::string_view flag, const std::string& text) {
  try {
    return runtime::ProviderChoice::parse(text);
  } catch (const Error& error) {
    fail("{}: {}", flag, error.what());
  }
}

ProviderSelection provider_selection(const ProviderArguments& arguments) {
  ProviderSelection selection;
  selection.choice = parse_provider_flag("--provider", arguments.provider);
  selection.options = runtime::parse_provider_options(arguments.provider_options);
  if (arguments.force_gpu && arguments.force_cpu) {
    fail("--force-gpu and --force-cpu contradict each other; pass one of them");
  }
  const bool named_cpu =
      !selection.choice.automatic && selection.choice.provider == runtime::ProviderId::kCpu;
  if (arguments.force_gpu && named_cpu) {
    fail("--force-gpu contradicts --provider cpu; name a GPU provider or use --provider auto");
  }
  if (arguments.force_cpu && !selection.choice.automatic && !named_cpu) {
    fail("--force-cpu contradicts --provider {}; drop one of them", selection.choice.to_string());
  }
  selection.force = arguments.force_gpu   ? runtime::ForceMode::kGpu
                    : arguments.force_cpu ? runtime::ForceMode::kCpu
                                          : runtime::ForceMode::kNone;
  // The engine's check (the C API and the server make the same), before any model loads.
  pipeline::ProviderPlacement placement;
  placement.choice = selection.choice;
  placement.force = selection.force;
  placement.options = selection.options;
  try {
    placement.validate();
  } catch (const Error& error) {
    fail("{}", with_flag_names(error.what()));
  }
  return selection;
}

}  // namespace parley::cli
