#pragma once
// The diarization options, each written once: name, type, default, bounds or choices, help, the
// faces that offer it (the CLI's flags, the server's form fields, the C API's parley_params and
// parley_run_options, Python's Pipeline keywords, parley.distributed's arguments) and the
// configuration field it sets (the name the library's messages use).
//   The CLI registers its flags from it (cli/diarization_options.cpp), the server checks form
//   fields against it and writes its OpenAPI form from it (server/http_api.cpp), and the C API
//   hands it out as JSON (parley_options_json), against which tests hold the C params, the
//   Python keywords and parley.distributed's arguments.
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace parley::pipeline {

// Recordings a corpus run decodes, and clusters, at once (the option "jobs"): its default and
// bound, which corpus::CorpusConfig and corpus::EngineLayoutRequest take.
inline constexpr int kDefaultCorpusJobs = 2;
inline constexpr int kMaxCorpusJobs = 256;
// The cosine score at or above which a speaker and a voiceprint match (the option
// "identify_threshold"): identity::kDefaultThreshold and PARLEY_DEFAULT_IDENTIFY_THRESHOLD.
inline constexpr double kDefaultIdentifyThreshold = 0.5;

enum class OptionType {
  kNumber,   // a finite number within [minimum, maximum]
  kInteger,  // a whole number within [minimum, maximum]
  kChoice,   // one of `choices`
  kFlag,     // true or false
  kText,     // any text (checked where it is used: a provider name, ...)
  kPath,     // a file or folder
  kList,     // repeatable text ("key=value")
};

// What an option sets: the output (OutputSettings), how the run goes (ExecutionSettings), where
// the models run (ProviderPlacement), how a corpus run is laid out (corpus::EngineLayoutRequest),
// which model files load, how a face writes its result (format, exclusive, and how it reads and
// fuses a transcript: transcript_format, gap_tolerance), or who the speakers are (identity/: the
// speaker library, its threshold, linking across a corpus), or what a run records about itself
// (diagnostics: a trace of its stages), which changes neither the output nor the speed; or a live
// stream (stream/stream_options.h: the stream's own table, which StreamConfig checks against).
// pipeline/option_values.h applies the first three to a DiarizationConfig.
enum class OptionTarget {
  kOutput,
  kExecution,
  kPlacement,
  kLayout,
  kModels,
  kFace,
  kIdentity,
  kDiagnostics,
  kStream
};

struct OptionFaces {
  bool cli = false;
  bool server = false;
  bool c = false;
  bool python = false;
  bool dask = false;
};

struct OptionSpec {
  std::string name;  // canonical: the server's field, Python's keyword, snake_case
  OptionType type = OptionType::kText;
  nlohmann::json default_value;  // null: none (automatic, or not set)
  std::optional<double> minimum;
  std::optional<double> maximum;
  std::vector<std::string> choices;
  std::string help;
  OptionFaces faces;
  OptionTarget target = OptionTarget::kFace;
  std::string cli_flag;      // "--step"; the CLI's spelling of `name`
  std::string c_name;        // the parley_params / parley_run_options field (`name` when empty)
  std::string config_field;  // the configuration field set, as library messages name it
  std::vector<std::string> aliases;  // older public names still accepted ("step_seconds")
  // With faces.server: a job may set it (a form field applied to that job alone). The server's
  // other options are fixed when it starts: a job may name them with the server's value only.
  bool per_job = false;
  // Why a face of the library's users (CLI, C, Python, parley.distributed) lacks the option,
  // and how that face reaches the same setting where it can; empty when all four offer it. The
  // server is left out: it takes per job only the output settings a job can change, the rest
  // are `parley serve` flags fixed when it starts.
  std::string faces_note;

  std::string_view c_field() const { return c_name.empty() ? name : c_name; }
  std::string_view type_name() const;
  std::string_view target_name() const;  // "output", "execution", ... (OptionTarget)
  // The option as parley_options_json describes it.
  nlohmann::json to_json() const;
  // `text` as this option's typed value: a number, a whole number, one of the choices, a flag
  // (true/false/1/0/on/off; "on" is what an HTML checkbox sends), text or a path, or a list of
  // one item. Fails "{name}: {problem}" (an empty text is refused, never taken for false).
  nlohmann::json parse(std::string_view text) const;
  // Fails "{name}: {problem}" unless `value` is of this option's type and within its bounds or
  // choices; null (the default) passes. For faces that hand typed values (C fields, Python).
  void check_value(const nlohmann::json& value) const;
  // "" when `text` is a valid value of this option, else what is wrong ("must be 0.1 to 10 (got
  // 11)", "expected one of vbx, ahc (got 'x')"); the caller prefixes the name it knows it by.
  std::string check(std::string_view text) const;
};

std::span<const OptionSpec> diarization_options();
// The option named `name` or one of its aliases; fails naming the options when there is none.
const OptionSpec& diarization_option(std::string_view name);
// "num_speakers" -> "num-speakers": the CLI's spelling of a name.
std::string replace_underscores(std::string_view name);
// The options as a JSON array (parley_options_json, `parley options --json`).
std::string diarization_options_json();

}  // namespace parley::pipeline
