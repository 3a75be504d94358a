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
  // 0 is every core, as the table, the C API and Python take it.
  const CLI::Validator range = number_between(0, max_threads());
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

// The option table's check of a flag (pipeline/option_table.h): its grammar, choices and bounds,
// with the table's message (the one every face gives, here after the flag's name). The help
// shows the choices or bounds as CLI11 writes them.
CLI::Option* with_table_checks(CLI::Option* option, const pipeline::OptionSpec& spec) {
  std::string description;
  if (spec.type == pipeline::OptionType::kChoice) {
    description = CLI::IsMember(spec.choices).get_description();
  } else if (spec.minimum && spec.maximum) {
    description = number_between(*spec.minimum, *spec.maximum).get_description();
  } else if (spec.minimum) {
    description = number_at_least(*spec.minimum).get_description();
  }
  option->check(CLI::Validator(
      [&spec](std::string& text) -> std::string { return spec.check(text); }, description));
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

// Adds the option `spec` as its flag, with its help, checks and default (written into `target`,
// which the flag then fills).
template <typename T>
CLI::Option* add_spec_option(CLI::App& command, const pipeline::OptionSpec& spec, T& target,
                             bool with_checks = true) {
  set_default(target, spec.default_value);
  if constexpr (std::is_same_v<T, bool>) {
    return command.add_flag(spec.cli_flag, target, spec.help);
  } else {
    CLI::Option* option = command.add_option(spec.cli_flag, target, spec.help);
    if (!spec.default_value.is_null()) option->capture_default_str();
    return with_checks ? with_table_checks(option, spec) : option;
  }
}

// The same for the diarization table's option `name`.
template <typename T>
CLI::Option* add_table_option(CLI::App& command, std::string_view name, T& target,
                              bool with_checks = true) {
  return add_spec_option(command, pipeline::diarization_option(name), target, with_checks);
}

// The options of the table's cli face that a field of EngineFlags, DiarizationFlags,
// CorpusFlags, ProviderArguments, IdentityFlags or TranscriptFlags holds (registered by name in the
// add_*_flags functions); every other one is registered by add_extra_flags.
bool has_own_field(std::string_view name) {
  static constexpr std::string_view kOwnFields[] = {"models_dir",
                                                    "segmentation_model",
                                                    "embedding_model",
                                                    "plda_dir",
                                                    "provider",
                                                    "provider_options",
                                                    "force_gpu",
                                                    "force_cpu",
                                                    "segmentation_provider",
                                                    "embedding_provider",
                                                    "segmentation_batch",
                                                    "segmentation_sessions",
                                                    "gpu_float16",
                                                    "step",
                                                    "embedding_mode",
                                                    "threads",
                                                    "embedding_batch",
                                                    "clustering",
                                                    "ahc_threshold",
                                                    "num_speakers",
                                                    "min_speakers",
                                                    "max_speakers",
                                                    "exclusive",
                                                    "format",
                                                    "devices",
                                                    "engines",
                                                    "jobs",
                                                    "voiceprints",
                                                    "identify_threshold",
                                                    "link_speakers",
                                                    "speakers_table",
                                                    "trace",
                                                    "transcript_format",
                                                    "gap_tolerance"};
  return std::find(std::begin(kOwnFields), std::end(kOwnFields), name) != std::end(kOwnFields);
}

// The table's options without a field of their own, as flags whose values land in `extra` by the
// table's names, typed by OptionSpec::parse (a value it refuses is a usage error naming the
// flag). `extra` must outlive the parse.
void add_extra_flags(CLI::App& command, nlohmann::json& extra) {
  for (const pipeline::OptionSpec& spec : pipeline::diarization_options()) {
    if (!spec.faces.cli || has_own_field(spec.name)) continue;
    if (spec.type == pipeline::OptionType::kFlag) {
      command.add_flag_callback(
          spec.cli_flag, [&extra, &spec] { extra[spec.name] = true; }, spec.help);
      continue;
    }
    CLI::Option* option = command.add_option_function<std::string>(
        spec.cli_flag,
        [&extra, &spec](const std::string& text) {
          try {
            const nlohmann::json value = spec.parse(text);
            if (spec.type == pipeline::OptionType::kList && extra.contains(spec.name)) {
              extra[spec.name].push_back(value.at(0));
            } else {
              extra[spec.name] = value;
            }
          } catch (const Error&) {
            throw CLI::ValidationError(spec.cli_flag, spec.check(text));
          }
        },
        spec.help);
    option->type_name(spec.type == pipeline::OptionType::kInteger  ? "INT"
                      : spec.type == pipeline::OptionType::kNumber ? "FLOAT"
                                                                   : "TEXT");
    if (spec.default_value.is_string()) {
      option->default_str(spec.default_value.get<std::string>());
    } else if (!spec.default_value.is_null()) {
      option->default_str(spec.default_value.dump());
    }
    if (spec.type == pipeline::OptionType::kList) option->allow_extra_args(false);
    with_table_checks(option, spec);
  }
}

}  // namespace

CLI::Option* add_table_flag(CLI::App& command, std::string_view name, std::string& target) {
  return add_table_option(command, name, target);
}
CLI::Option* add_table_flag(CLI::App& command, std::string_view name, int& target) {
  return add_table_option(command, name, target);
}
CLI::Option* add_table_flag(CLI::App& command, std::string_view name, double& target) {
  return add_table_option(command, name, target);
}
CLI::Option* add_table_flag(CLI::App& command, std::string_view name, bool& target) {
  return add_table_option(command, name, target);
}
CLI::Option* add_spec_flag(CLI::App& command, const pipeline::OptionSpec& spec,
                           std::string& target) {
  return add_spec_option(command, spec, target);
}
CLI::Option* add_spec_flag(CLI::App& command, const pipeline::OptionSpec& spec, int& target) {
  return add_spec_option(command, spec, target);
}
CLI::Option* add_spec_flag(CLI::App& command, const pipeline::OptionSpec& spec, double& target) {
  return add_spec_option(command, spec, target);
}
CLI::Option* add_spec_flag(CLI::App& command, const pipeline::OptionSpec& spec, bool& target) {
  return add_spec_option(command, spec, target);
}

void add_clustering_flags(CLI::App& command, DiarizationFlags& flags) {
  add_table_option(command, "clustering", flags.clustering);
  add_table_option(command, "ahc_threshold", flags.ahc_threshold);
  add_table_option(command, "num_speakers", flags.num_speakers);
  add_table_option(command, "min_speakers", flags.min_speakers);
  add_table_option(command, "max_speakers", flags.max_speakers);
  // A missing folder is refused by the engine's locator (models/model_locator.h), as for every
  // face: a mistyped --models never falls back to $PARLEY_MODELS unnoticed.
  add_table_option(command, "models_dir", flags.models_dir);
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
  // 0 (all cores) is the default, not a value to pass; the bound is this machine's.
  add_table_option(command, "threads", engine.threads, false)
      ->description(fmt::format("{} (at most {} on this machine)",
                                pipeline::diarization_option("threads").help, max_threads()))
      ->check(threads_check());
  add_table_option(command, "embedding_batch", engine.embedding_batch);
  add_table_option(command, "segmentation_model", engine.segmentation_model);
  add_table_option(command, "embedding_model", engine.embedding_model);
  add_table_option(command, "plda_dir", engine.plda_dir);
  add_extra_flags(command, engine.extra);
}

void add_transcript_flags(CLI::App& command, TranscriptFlags& flags) {
  add_table_option(command, "transcript_format", flags.format);
  add_table_option(command, "gap_tolerance", flags.gap_tolerance);
}

nlohmann::json transcript_values(const TranscriptFlags& flags) {
  return {{"transcript_format", flags.format}, {"gap_tolerance", flags.gap_tolerance}};
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
  values.update(provider_values(engine.provider));
  text("segmentation_provider", engine.model_providers.segmentation_provider);
  text("embedding_provider", engine.model_providers.embedding_provider);
  count("segmentation_batch", engine.model_providers.accelerator_segmentation_batch);
  count("segmentation_sessions", engine.model_providers.accelerator_segmentation_sessions);
  values["gpu_float16"] = engine.model_providers.accelerator_float16;
  values["step"] = engine.step;
  text("embedding_mode", engine.embedding_mode);
  values["threads"] = engine.threads;
  values["embedding_batch"] = engine.embedding_batch;
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
  for (const auto& [name, value] : engine.extra.items()) values[name] = value;
  return values;
}

pipeline::DiarizationConfig diarization_config(const EngineFlags& engine,
                                               const DiarizationFlags& flags,
                                               double expected_audio_seconds) {
  // The engine's one way from option values to a configuration (pipeline/option_values.h): it
  // alone decides what the flags mean together; its messages name options, which main.cpp turns
  // into flags (cli/flag_names.h).
  pipeline::DiarizationConfig config;
  pipeline::apply_options(table_values(engine, flags), config);
  if (expected_audio_seconds > 0.0)
    config.placement->expected_audio_seconds = expected_audio_seconds;
  return config;
}

std::string ModelProviders::describe() const {
  return corpus::describe_providers(segmentation, embedding);
}

std::optional<runtime::WatchedDevice> ModelProviders::watched_device() const {
  return runtime::watched_device(segmentation, segmentation_options, embedding, embedding_options);
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

std::string format_result(const pipeline::DiarizationResult& result,
                          const DiarizationFlags& flags) {
  check_format(flags, false);
  pipeline::ResultFormatOptions options;
  options.exclusive = flags.exclusive;
  return pipeline::format_result(result, pipeline::result_format_or_default(flags.format), options);
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
