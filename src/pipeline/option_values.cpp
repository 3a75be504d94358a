#include "pipeline/option_values.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "pipeline/option_table.h"

namespace parley::pipeline {

namespace {

bool flag(const nlohmann::json& values, std::string_view name) {
  const auto found = values.find(name);
  return found != values.end() && !found->is_null() && found->get<bool>();
}

std::optional<std::string> text(const nlohmann::json& values, std::string_view name) {
  const auto found = values.find(name);
  if (found == values.end() || found->is_null()) return std::nullopt;
  return found->get<std::string>();
}

runtime::ProviderChoice provider_choice(std::string_view name, const std::string& value) {
  try {
    return runtime::ProviderChoice::parse(value);
  } catch (const Error& error) {
    fail("{}: {}", name, error.what());
  }
}

}  // namespace

ProviderPlacement provider_placement(const nlohmann::json& values) {
  ProviderPlacement placement;
  placement.choice = provider_choice("provider", text(values, "provider").value_or("auto"));
  std::vector<std::string> option_texts;
  if (const auto found = values.find("provider_options");
      found != values.end() && !found->is_null()) {
    option_texts = found->get<std::vector<std::string>>();
  }
  try {
    placement.options = runtime::parse_provider_options(option_texts);
  } catch (const Error& error) {
    fail("provider_options: {}", error.what());
  }
  if (const auto found = values.find("device_id"); found != values.end() && !found->is_null()) {
    if (found->get<double>() >= 0) {
      if (placement.options.contains("device_id")) {
        fail("device_id: set twice (in device_id and in provider_options); keep one");
      }
      // As the provider reads it: "1" (a typed face may hand 1.0).
      placement.options["device_id"] =
          found->is_number_float() ? fmt::format("{}", found->get<double>()) : found->dump();
    }
  }
  const bool force_gpu = flag(values, "force_gpu");
  const bool force_cpu = flag(values, "force_cpu");
  if (force_gpu && force_cpu) {
    fail("force_gpu: contradicts force_cpu; set one of them");
  }
  const bool named_cpu =
      !placement.choice.automatic && placement.choice.provider == runtime::ProviderId::kCpu;
  if (force_gpu && named_cpu) {
    fail("force_gpu: contradicts provider cpu; name a GPU provider or use provider auto");
  }
  if (force_cpu && !placement.choice.automatic && !named_cpu) {
    fail("force_cpu: contradicts provider {}; drop one of them", placement.choice.to_string());
  }
  placement.force = force_gpu   ? runtime::ForceMode::kGpu
                    : force_cpu ? runtime::ForceMode::kCpu
                                : runtime::ForceMode::kNone;
  const auto per_model = [&](std::string_view name) -> std::optional<runtime::ProviderChoice> {
    const auto value = text(values, name);
    if (!value) return std::nullopt;
    const auto parsed = provider_choice(name, *value);
    const bool names_cpu = !parsed.automatic && parsed.provider == runtime::ProviderId::kCpu;
    if (force_cpu && !parsed.automatic && !names_cpu) {
      fail("force_cpu: contradicts {} {}; drop one of them", name, parsed.to_string());
    }
    return parsed;
  };
  placement.segmentation_choice = per_model("segmentation_provider");
  placement.embedding_choice = per_model("embedding_provider");
  placement.validate();
  return placement;
}

namespace {

using Apply = std::function<void(const nlohmann::json& value, DiarizationConfig& config)>;

// One case per kOutput and kExecution option (kPlacement ones go through provider_placement).
const std::map<std::string, Apply, std::less<>>& apply_cases() {
  static const std::map<std::string, Apply, std::less<>> cases = {
      {"step", [](const auto& v, auto& c) { c.step_seconds = v.template get<double>(); }},
      {"embedding_mode",
       [](const auto& v, auto& c) {
         c.embedding_mode = stages::parse_embedding_mode(v.template get<std::string>());
       }},
      {"embedding_features",
       [](const auto& v, auto& c) {
         c.shared_trunk.features =
             stages::parse_shared_trunk_features(v.template get<std::string>());
       }},
      {"clustering",
       [](const auto& v, auto& c) {
         c.clustering.method = cluster::parse_clustering_method(v.template get<std::string>());
       }},
      // After clustering (the map's order puts it first: checked in apply_options).
      {"ahc_threshold",
       [](const auto& v, auto& c) {
         c.clustering.ahc.threshold = v.template get<double>();
         // An explicit threshold is the user's choice for every recording length.
         c.clustering.ahc.adaptive_threshold = false;
       }},
      {"num_speakers",
       [](const auto& v, auto& c) { c.speakers.num_speakers = v.template get<int>(); }},
      {"min_speakers",
       [](const auto& v, auto& c) { c.speakers.min_speakers = v.template get<int>(); }},
      {"max_speakers",
       [](const auto& v, auto& c) { c.speakers.max_speakers = v.template get<int>(); }},
      {"gpu_float16",
       [](const auto& v, auto& c) { c.accelerator_float16 = v.template get<bool>(); }},
      {"sincnet_per_chunk",
       [](const auto& v, auto& c) { c.share_segmentation_convolution = !v.template get<bool>(); }},
      {"threads",
       [](const auto& v, auto& c) {
         // Checked here on the value a face handed (Python's 2**40), which no int holds;
         // config.validate() checks the same bound on what it is given.
         const auto threads = v.template get<double>();
         if (threads > max_threads()) {
           fail("threads: must be at most {} on this machine ({} per hardware thread; got {})",
                max_threads(), kMaxThreadsPerHardwareThread, v.dump());
         }
         c.threads = threads > 0
                         ? static_cast<int>(threads)
                         : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
       }},
      {"embedding_batch",
       [](const auto& v, auto& c) { c.embedding_batch_size = v.template get<std::size_t>(); }},
      {"segmentation_batch",
       [](const auto& v, auto& c) {
         c.segmentation_batch_size = v.template get<std::size_t>();
         if (c.placement)
           c.placement->accelerator_segmentation_batch_size = c.segmentation_batch_size;
       }},
      {"segmentation_sessions",
       [](const auto& v, auto& c) {
         // A value past int's range stays past the engine's bound (validate() refuses it).
         c.segmentation_accelerator_sessions = static_cast<int>(
             std::min(v.template get<double>(), double{std::numeric_limits<int>::max()}));
       }},
      {"no_streaming", [](const auto& v, auto& c) { c.streaming = !v.template get<bool>(); }},
      {"cuda_graph",
       [](const auto& v, auto& c) {
         c.embedding_graph_capture = v.template get<std::string>() == "on";
       }},
  };
  return cases;
}

bool applied_here(OptionTarget target) {
  return target == OptionTarget::kOutput || target == OptionTarget::kExecution ||
         target == OptionTarget::kPlacement;
}

}  // namespace

void apply_options(const nlohmann::json& values, DiarizationConfig& config) {
  if (!values.is_object()) fail("options: expected an object of option values");
  for (const auto& [name, value] : values.items()) {
    const OptionSpec& spec = diarization_option(name);
    if (spec.name != name) fail("{}: the option is named {}; use that name", name, spec.name);
    spec.check_value(value);
  }
  config.placement = provider_placement(values);
  // The defaults first (threads 0: all cores), then the values given.
  const auto value_of = [&values](const OptionSpec& spec) -> const nlohmann::json& {
    const auto found = values.find(spec.name);
    return found != values.end() && !found->is_null() ? *found : spec.default_value;
  };
  if (!value_of(diarization_option("ahc_threshold")).is_null() &&
      value_of(diarization_option("clustering")) != "ahc") {
    fail("ahc_threshold: applies to clustering ahc only");
  }
  for (const OptionSpec& spec : diarization_options()) {
    if (!applied_here(spec.target) || spec.target == OptionTarget::kPlacement) continue;
    const auto apply = apply_cases().find(spec.name);
    if (apply == apply_cases().end()) {
      fail("{}: the engine has no way to apply this option yet (pipeline/option_values.cpp)",
           spec.name);
    }
    const nlohmann::json& value = value_of(spec);
    if (!value.is_null()) apply->second(value, config);
  }
  config.validate();
}

DiarizationModels locate_models(const nlohmann::json& values) {
  const auto path = [&values](std::string_view name) {
    return std::filesystem::path(text(values, name).value_or(""));
  };
  const auto models_dir = text(values, "models_dir");
  return locate_models(
      {path("segmentation_model"), path("embedding_model"), path("plda_dir")},
      models_dir ? std::optional<std::filesystem::path>(*models_dir) : std::nullopt);
}

TranscriptOptions transcript_options(const nlohmann::json& values) {
  const auto value_of = [&values](std::string_view name) -> nlohmann::json {
    const OptionSpec& spec = diarization_option(name);
    const auto found = values.find(name);
    if (found == values.end() || found->is_null()) return spec.default_value;
    spec.check_value(*found);
    return *found;
  };
  TranscriptOptions options;
  if (const std::string format = value_of("transcript_format"); format != "auto") {
    options.format = transcript::parse_transcript_format(format);
  }
  options.fusion.gap_tolerance = value_of("gap_tolerance").get<double>();
  return options;
}

}  // namespace parley::pipeline
