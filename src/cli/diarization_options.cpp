#include "cli/diarization_options.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <thread>
#include <type_traits>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/error.h"
#include "corpus/run_record.h"
#include "frames/output.h"
#include "pipeline/option_table.h"
#include "pipeline/option_values.h"
#include "pipeline/result_writer.h"
#include "runtime/provider_discovery.h"

namespace parley::cli {

namespace {

// `text` as the user wrote it, cut short when long.
std::string shown(const std::string& text) {
  return text.size() <= 24 ? text : text.substr(0, 21) + "...";
}

CLI::Validator number_check(double minimum, bool minimum_allowed, double maximum) {
  const auto bound = [](double value) { return fmt::format("{}", value); };
  const std::string lower = (minimum_allowed ? ">= " : "> ") + bound(minimum);
  std::string description = std::isinf(maximum) ? lower : lower + ", <= " + bound(maximum);
  return CLI::Validator(
      [minimum, minimum_allowed, maximum, bound](std::string& text) -> std::string {
        double value = 0.0;
        const char* end = text.data() + text.size();
        const auto [rest, error] = std::from_chars(text.data(), end, value);
        if (error != std::errc() || rest != end || !std::isfinite(value)) {
          return fmt::format("expects a number (got '{}')", shown(text));
        }
        if (minimum_allowed && value < minimum) {
          return fmt::format("must be at least {} (got {})", bound(minimum), shown(text));
        }
        if (!minimum_allowed && value <= minimum) {
          return fmt::format("must be more than {} (got {})", bound(minimum), shown(text));
        }
        if (value > maximum) {
          return fmt::format("must be at most {} (got {})", bound(maximum), shown(text));
        }
        return "";
      },
      description);
}

}  // namespace

CLI::Validator number_between(double minimum, double maximum) {
  return number_check(minimum, true, maximum);
}

CLI::Validator number_at_least(double minimum) {
  return number_check(minimum, true, std::numeric_limits<double>::infinity());
}

CLI::Validator number_above(double bound) {
  return number_check(bound, false, std::numeric_limits<double>::infinity());
}

int max_threads() { return pipeline::max_threads(); }

CLI::Validator threads_check() {
  const CLI::Validator range = number_between(1, max_threads());
  return CLI::Validator(
      [range](std::string& text) -> std::string {
        std::string problem = range(text);
        // The bound follows the machine: a value quoted from a bigger host must not read as a
        // fixed limit of parley.
        if (problem.starts_with("must be at most")) {
          problem += fmt::format(
              " on this machine: the bound is {} threads per core ({} cores here), as more only "
              "add memory, not speed",
              pipeline::kMaxThreadsPerHardwareThread,
              std::max(1u, std::thread::hardware_concurrency()));
        }
        return problem;
      },
      range.get_description());
}

namespace {

// The option table's checks of a flag (pipeline/option_table.h): its choices, its bounds.
CLI::Option* with_table_checks(CLI::Option* option, const pipeline::OptionSpec& spec) {
  if (spec.type == pipeline::OptionType::kChoice) {
    option->check(CLI::IsMember(spec.choices));
  }
  if (spec.minimum && spec.maximum) {
    option->check(number_between(*spec.minimum, *spec.maximum));
  } else if (spec.minimum) {
    option->check(number_at_least(*spec.minimum));
  }
  return option;
}

template <typename T>
struct OptionalValue {
  using type = T;
};
template <typename T>
struct OptionalValue<std::optional<T>> {
  using type = T;
};

// The table's default into the flag's variable; a null default (none, automatic) leaves it.
template <typename T>
void set_default(T& target, const nlohmann::json& value) {
  if (!value.is_null()) target = value.get<typename OptionalValue<T>::type>();
}

// Adds the table's option `name` as its flag, with its help, checks and default (written into
// `target`, which the flag then fills).
template <typename T>
CLI::Option* add_table_option(CLI::App& command, std::string_view name, T& target,
                              bool with_checks = true) {
  const pipeline::OptionSpec& spec = pipeline::diarization_option(name);
  set_default(target, spec.default_value);
  if constexpr (std::is_same_v<T, bool>) {
    return command.add_flag(spec.cli_flag, target, spec.help);
  } else {
    CLI::Option* option = command.add_option(spec.cli_flag, target, spec.help);
    if (!spec.default_value.is_null()) option->capture_default_str();
    return with_checks ? with_table_checks(option, spec) : option;
  }
}

}  // namespace

CLI::Option* add_table_flag(CLI::App& command, std::string_view name, std::string& target) {
  return add_table_option(command, name, target);
}
CLI::Option* add_table_flag(CLI::App& command, std::string_view name, int& target) {
  return add_table_option(command, name, target);
}

void add_clustering_flags(CLI::App& command, DiarizationFlags& flags) {
  add_table_option(command, "clustering", flags.clustering);
  add_table_option(command, "ahc_threshold", flags.ahc_threshold);
  add_table_option(command, "num_speakers", flags.num_speakers);
  add_table_option(command, "min_speakers", flags.min_speakers);
  add_table_option(command, "max_speakers", flags.max_speakers);
  // A mistyped --models must not fall back to $PARLEY_MODELS unnoticed.
  add_table_option(command, "models_dir", flags.models_dir)
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            std::error_code ec;
            if (std::filesystem::is_directory(text, ec)) return "";
            return fmt::format(
                "no such folder '{}' (pass the folder that holds the models, or leave --models "
                "out to use $PARLEY_MODELS and the per-user cache)",
                text);
          },
          "DIR"));
  command
      .add_flag("-q,--quiet", flags.quiet,
                "only errors on standard error: no progress, summary or warnings")
      ->each([](const std::string&) { spdlog::set_level(spdlog::level::err); });
}

void add_diarization_flags(CLI::App& command, DiarizationFlags& flags) {
  add_clustering_flags(command, flags);
  // No default written into flags.format: with a transcript the default is txt (check_format).
  with_table_checks(
      command.add_option("--format", flags.format, pipeline::diarization_option("format").help),
      pipeline::diarization_option("format"));
  add_table_option(command, "exclusive", flags.exclusive);
  command.add_option("-o,--out", flags.out, "output file, - for standard output")
      ->capture_default_str();
  add_force_flag(command, flags.force);
}

void add_force_flag(CLI::App& command, bool& force) {
  command.add_flag("--force", force,
                   "replace output files that are read-only (they keep their mode); without it "
                   "such a file is refused before any work");
}

void check_format(const DiarizationFlags& flags, bool with_transcript) {
  if (with_transcript && flags.format == "rttm") {
    fail("--format rttm has no place for words; with a transcript use srt, vtt, txt or json");
  }
}

void add_engine_flags(CLI::App& command, EngineFlags& engine) {
  add_provider_options(command, engine.provider);
  add_model_provider_flags(command, engine.model_providers);
  add_table_option(command, "step", engine.step);
  add_table_option(command, "embedding_mode", engine.embedding_mode);
  add_table_option(command, "embedding_features", engine.embedding_features);
  // 0 (all cores) is the default, not a value to pass; the bound is this machine's.
  add_table_option(command, "threads", engine.threads, false)
      ->description(fmt::format("{} (at most {} on this machine)",
                                pipeline::diarization_option("threads").help, max_threads()))
      ->check(threads_check());
  add_table_option(command, "embedding_batch", engine.embedding_batch);
  add_table_option(command, "no_streaming", engine.no_streaming);
  add_table_option(command, "sincnet_per_chunk", engine.sincnet_per_chunk);
  add_table_option(command, "cuda_graph", engine.cuda_graph);
  add_table_option(command, "segmentation_model", engine.segmentation_model);
  add_table_option(command, "embedding_model", engine.embedding_model);
  add_table_option(command, "plda_dir", engine.plda_dir);
}

pipeline::DiarizationModels resolve_models(const EngineFlags& engine,
                                           const DiarizationFlags& flags) {
  return pipeline::locate_models(table_values(engine, flags));
}

nlohmann::json table_values(const EngineFlags& engine, const DiarizationFlags& flags) {
  nlohmann::json values = nlohmann::json::object();
  const auto text = [&values](const char* name, const std::string& value) {
    if (!value.empty()) values[name] = value;
  };
  const auto count = [&values](const char* name, auto value) {
    if (value > 0) values[name] = value;  // 0: automatic, the table's null
  };
  text("provider", engine.provider.provider);
  if (!engine.provider.provider_options.empty()) {
    values["provider_options"] = engine.provider.provider_options;
  }
  values["force_gpu"] = engine.provider.force_gpu;
  values["force_cpu"] = engine.provider.force_cpu;
  text("segmentation_provider", engine.model_providers.segmentation_provider);
  text("embedding_provider", engine.model_providers.embedding_provider);
  count("segmentation_batch", engine.model_providers.accelerator_segmentation_batch);
  count("segmentation_sessions", engine.model_providers.accelerator_segmentation_sessions);
  values["gpu_float16"] = engine.model_providers.accelerator_float16;
  values["step"] = engine.step;
  text("embedding_mode", engine.embedding_mode);
  text("embedding_features", engine.embedding_features);
  values["threads"] = engine.threads;
  values["embedding_batch"] = engine.embedding_batch;
  values["no_streaming"] = engine.no_streaming;
  values["sincnet_per_chunk"] = engine.sincnet_per_chunk;
  text("cuda_graph", engine.cuda_graph);
  text("segmentation_model", engine.segmentation_model);
  text("embedding_model", engine.embedding_model);
  text("plda_dir", engine.plda_dir);
  text("clustering", flags.clustering);
  if (flags.ahc_threshold) values["ahc_threshold"] = *flags.ahc_threshold;
  if (flags.num_speakers) values["num_speakers"] = *flags.num_speakers;
  if (flags.min_speakers) values["min_speakers"] = *flags.min_speakers;
  if (flags.max_speakers) values["max_speakers"] = *flags.max_speakers;
  if (flags.models_dir) values["models_dir"] = *flags.models_dir;
  values["exclusive"] = flags.exclusive;
  text("format", flags.format);
  return values;
}

pipeline::DiarizationConfig diarization_config(const EngineFlags& engine,
                                               const DiarizationFlags& flags,
                                               double expected_audio_seconds) {
  // The engine's one way from option values to a configuration (pipeline/option_values.h); its
  // messages name options, which main.cpp turns into flags.
  // The provider flags first, for their messages in flag names.
  provider_selection(engine.provider);
  pipeline::DiarizationConfig config;
  pipeline::apply_options(table_values(engine, flags), config);
  if (expected_audio_seconds > 0.0)
    config.placement->expected_audio_seconds = expected_audio_seconds;
  return config;
}

std::string ModelProviders::describe() const {
  return corpus::describe_providers(segmentation, embedding);
}

ModelProviders model_providers(const pipeline::DiarizationModels& models,
                               const pipeline::DiarizationConfig& config) {
  const pipeline::ModelSessionPlan plan = pipeline::plan_model_sessions(models, config);
  ModelProviders providers;
  providers.segmentation = plan.segmentation.provider;
  providers.segmentation_options = plan.segmentation.provider_options;
  providers.embedding = plan.embedding.session.provider;
  providers.embedding_options = plan.embedding.session.provider_options;
  return providers;
}

void add_model_provider_flags(CLI::App& command, ModelProviderFlags& flags) {
  add_table_option(command, "segmentation_provider", flags.segmentation_provider);
  add_table_option(command, "embedding_provider", flags.embedding_provider);
  // 0 in these fields: automatic (the table's null default).
  add_table_option(command, "segmentation_batch", flags.accelerator_segmentation_batch);
  add_table_option(command, "segmentation_sessions", flags.accelerator_segmentation_sessions);
  add_table_option(command, "gpu_float16", flags.accelerator_float16);
}

void apply_diarization_flags(const DiarizationFlags& flags, pipeline::DiarizationConfig& config) {
  config.clustering.method = cluster::parse_clustering_method(flags.clustering);
  if (flags.ahc_threshold) {
    if (config.clustering.method != cluster::ClusteringMethod::kAhc) {
      fail("--ahc-threshold applies to --clustering ahc only");
    }
    config.clustering.ahc.threshold = *flags.ahc_threshold;
    // An explicit threshold is the user's choice for every recording length.
    config.clustering.ahc.adaptive_threshold = false;
  }
  config.speakers.num_speakers = flags.num_speakers;
  config.speakers.min_speakers = flags.min_speakers;
  config.speakers.max_speakers = flags.max_speakers;
  config.validate();
}

std::string format_result(const pipeline::DiarizationResult& result,
                          const DiarizationFlags& flags) {
  check_format(flags, false);
  pipeline::ResultFormatOptions options;
  options.exclusive = flags.exclusive;
  return pipeline::format_result(result, flags.format.empty() ? "rttm" : flags.format, options);
}

void write_output(const std::string& text, const std::string& out, const OutputOptions& options) {
  if (out == "-" || out.empty()) {
    // A full disk or a closed pipe behind standard output must not pass for success.
    const std::size_t written = std::fwrite(text.data(), 1, text.size(), stdout);
    if (std::fflush(stdout) != 0 || written != text.size() || std::ferror(stdout) != 0) {
      fail("cannot write to standard output: {} (is the disk behind it full?)",
           std::strerror(errno));
    }
    return;
  }
  write_file_atomically(out, text, options);
}

void check_output_file(std::string_view flag, const std::string& out,
                       const OutputOptions& options) {
  if (out == "-" || out.empty()) return;
  if (const auto problem = output_problem(out, options)) fail("{} {}: {}", flag, out, *problem);
}

void prepare_output_folder(std::string_view flag, const std::filesystem::path& folder) {
  std::error_code error;
  if (std::filesystem::exists(folder, error) && !std::filesystem::is_directory(folder, error)) {
    fail("{} {}: exists and is not a folder; name a folder (it is created if missing)", flag,
         folder.string());
  }
  std::filesystem::create_directories(folder, error);
  if (error) fail("{} {}: cannot create it: {}", flag, folder.string(), error.message());
}

}  // namespace parley::cli
