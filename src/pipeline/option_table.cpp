#include "pipeline/option_table.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "cluster/speaker_count_constraints.h"
#include "core/error.h"
#include "pipeline/diarizer.h"
#include "pipeline/result_writer.h"
#include "transcript/fusion.h"
#include "transcript/transcript.h"

namespace parley::pipeline {

namespace {

// Who offers an option, in the order of OptionFaces' fields.
constexpr OptionFaces kEveryFace{true, true, true, true, true};
// Only where the command line itself is the reason (its faces_note says why).
constexpr OptionFaces kCliOnly{true, false, false, false, false};
// The engine's settings outside the server, which fixes them when it starts (`parley serve`
// takes them as flags, and lays out its engine once: devices, engines, jobs).
constexpr OptionFaces kLibraryFaces{true, false, true, true, true};
// What reads a transcript: `parley diarize --transcript` and `parley fuse`, and a server's job
// that comes with one.
constexpr OptionFaces kTranscriptFaces{true, true, false, false, false};

OptionSpec option(std::string name, OptionType type, nlohmann::json default_value, std::string help,
                  OptionFaces faces, std::string cli_flag, std::string config_field = "") {
  OptionSpec spec;
  spec.name = std::move(name);
  spec.type = type;
  spec.default_value = std::move(default_value);
  spec.help = std::move(help);
  spec.faces = faces;
  spec.cli_flag = std::move(cli_flag);
  spec.config_field = std::move(config_field);
  return spec;
}

OptionSpec bounded(OptionSpec spec, std::optional<double> minimum,
                   std::optional<double> maximum = std::nullopt) {
  spec.minimum = minimum;
  spec.maximum = maximum;
  return spec;
}

OptionSpec noted(OptionSpec spec, std::string faces_note) {
  spec.faces_note = std::move(faces_note);
  return spec;
}

OptionSpec choice(std::string name, std::vector<std::string> choices, std::string default_value,
                  std::string help, OptionFaces faces, std::string cli_flag,
                  std::string config_field = "") {
  OptionSpec spec = option(std::move(name), OptionType::kChoice, std::move(default_value),
                           std::move(help), faces, std::move(cli_flag), std::move(config_field));
  spec.choices = std::move(choices);
  return spec;
}

std::vector<OptionSpec> make_options() {
  const DiarizationConfig defaults;
  std::vector<OptionSpec> options;
  const auto add = [&options](OptionSpec spec) { options.push_back(std::move(spec)); };
  add(option("models_dir", OptionType::kPath, nullptr,
             "folder with the models, searched before the per-user cache (default: "
             "$PARLEY_MODELS, else models/ beside parley after the cache)",
             kLibraryFaces, "--models", "models_dir"));
  add(option("segmentation_model", OptionType::kPath, nullptr,
             "segmentation .onnx (default: found through models_dir)", kLibraryFaces,
             "--segmentation-model"));
  add(option("embedding_model", OptionType::kPath, nullptr,
             "speaker-embedding .onnx (default: found through models_dir)", kLibraryFaces,
             "--embedding-model"));
  add(option("plda_dir", OptionType::kPath, nullptr,
             "folder with plda.npz and xvec_transform.npz (default: found through models_dir)",
             kLibraryFaces, "--plda"));
  add(option("provider", OptionType::kText, "auto",
             "execution provider: auto (a GPU where it pays off, else the CPU), cpu, cuda, "
             "tensorrt, migraphx, rocm, coreml, openvino, dml (docs/providers.md)",
             kLibraryFaces, "--provider"));
  {
    OptionSpec spec =
        option("provider_options", OptionType::kList, nlohmann::json::array(),
               "key=value passed to the execution provider, repeatable (e.g. device_id=1)",
               kLibraryFaces, "--provider-option", "provider_options");
    add(std::move(spec));
  }
  add(noted(bounded(option("device_id", OptionType::kInteger, -1,
                           "accelerator number; -1: the provider's default (the CLI passes it as "
                           "--provider-option device_id=N)",
                           {false, false, true, true, false}, ""),
                    -1),
            "the CLI takes it as provider_options device_id=N; parley.distributed sets it on "
            "each worker, one engine per GPU of the worker's resources"));
  {
    OptionSpec step = bounded(option("step", OptionType::kNumber, defaults.step_seconds,
                                     "seconds between 10 s analysis windows: 1 (pyannote) or 2 "
                                     "(faster); on the server fixed when it starts",
                                     kEveryFace, "--step", "step_seconds"),
                              0.1, 10.0);
    step.aliases = {"step_seconds"};
    add(std::move(step));
  }
  add(choice("embedding_mode", {"shared", "exact"},
             stages::embedding_mode_name(defaults.embedding_mode),
             "shared: the embedding network runs once over the whole recording and each 10 s "
             "chunk takes its slice (6-9x less embedding time); exact: once per chunk, pyannote's "
             "definition (docs/embedding.md); on the server fixed when it starts",
             kEveryFace, "--embedding-mode", "embedding_mode"));
  add(choice("clustering", {"vbx", "ahc"}, "vbx",
             "vbx (PLDA + VBx, pyannote's) or ahc; on the server fixed when it starts", kEveryFace,
             "--clustering"));
  add(bounded(option("ahc_threshold", OptionType::kNumber, nullptr,
                     "AHC cosine-distance threshold (default 0.60; 0.65 for long recordings)",
                     kLibraryFaces, "--ahc-threshold"),
              0.0, 2.0));
  add(bounded(option("threads", OptionType::kInteger, 0,
                     "CPU threads; 0: all cores (at most 4 per core); output is the same for any "
                     "value",
                     kLibraryFaces, "--threads"),
              0));
  for (const auto& [name, help] :
       {std::pair{"num_speakers", "exact number of speakers, when known"},
        std::pair{"min_speakers", "at least this many speakers"},
        std::pair{"max_speakers", "at most this many speakers"}}) {
    add(bounded(option(name, OptionType::kInteger, nullptr, help, kEveryFace,
                       "--" + replace_underscores(name), name),
                1, cluster::kMaxSpeakerCount));
  }
  add(bounded(option("embedding_batch", OptionType::kInteger, defaults.embedding_batch_size,
                     "chunks per embedding call in exact mode (on a GPU 128 ran an hour in 16 s "
                     "instead of 30 s, docs/benchmarks.md; larger batches hold more memory)",
                     kLibraryFaces, "--embedding-batch", "embedding_batch_size"),
              1));
  add(bounded(option("segmentation_batch", OptionType::kInteger, nullptr,
                     "chunks per segmentation call (default: on the CPU 8 / threads, from 2 to 4; "
                     "128 on a GPU, 256 with several engines on a GPU); 1 on the CPU rounds "
                     "differently in the last bits",
                     kLibraryFaces, "--segmentation-batch", "segmentation_batch_size"),
              1));
  add(bounded(option("segmentation_sessions", OptionType::kInteger, nullptr,
                     "segmentation calls feeding a GPU at once (each on its own stream, all "
                     "through one session; default 4, 2 per engine with several engines on a "
                     "GPU); output does not depend on it",
                     kLibraryFaces, "--segmentation-sessions", "segmentation_accelerator_sessions"),
              1));
  add(option("segmentation_provider", OptionType::kText, nullptr,
             "provider of the segmentation model only (overrides provider for it)", kLibraryFaces,
             "--segmentation-provider"));
  add(option("embedding_provider", OptionType::kText, nullptr,
             "provider of the speaker-embedding model only (overrides provider for it)",
             kLibraryFaces, "--embedding-provider"));
  add(option("force_gpu", OptionType::kFlag, false,
             "run every model on the GPU provider, even small or not yet compiled jobs; fail if "
             "no GPU provider can be used",
             kLibraryFaces, "--force-gpu"));
  add(option("force_cpu", OptionType::kFlag, false, "run every model on the CPU", kLibraryFaces,
             "--force-cpu"));
  add(option("gpu_float16", OptionType::kFlag, false,
             "run the models in float16 on a CUDA/ROCm GPU (tensor cores; not exact: agreement "
             "with float32 in docs/benchmarks.md); no effect on the CPU",
             kLibraryFaces, "--gpu-float16", "accelerator_float16"));
  add(option("no_streaming", OptionType::kFlag, false,
             "segment the whole recording before embedding (same output; for timing the overlap "
             "of the two stages)",
             kLibraryFaces, "--no-streaming"));
  add(option("sincnet_per_chunk", OptionType::kFlag, false,
             "on the CPU, run segmentation's first convolution on every 10 s chunk, as pyannote "
             "does, instead of once over the recording (slower; the same within rounding, "
             "docs/segmentation.md)",
             kLibraryFaces, "--sincnet-per-chunk"));
  add(choice("embedding_features", {"auto", "host", "graph"},
             stages::shared_trunk_features_name(defaults.shared_trunk.features),
             "where the shared mode's graph passes compute fbank features: graph (on the "
             "accelerator, in front of the embedding network), host (the CPU) or auto (graph on "
             "an accelerator that takes any shape)",
             kLibraryFaces, "--embedding-features", "shared_trunk.features"));
  // Segmentation stays out: cuDNN's LSTM fails inside a capture (docs/benchmarks.md).
  add(choice("cuda_graph", {"off", "on"}, "off",
             "replay the speaker-embedding network's passes as captured CUDA graphs (a session "
             "per model set; slower in a corpus, figures in docs/benchmarks.md); refused where "
             "that network runs on the CPU",
             kLibraryFaces, "--cuda-graph", "embedding_graph_capture"));
  // How a corpus run is laid out (corpus/engine_layout.h): not output settings.
  add(option("devices", OptionType::kText, nullptr,
             "GPUs to spread recordings over, one model set each: 0,1,... or all", kLibraryFaces,
             "--devices", "device_list"));
  add(bounded(option("engines", OptionType::kInteger, nullptr,
                     "model sets per device (or on the CPU) taking recordings from one queue "
                     "(default: on a GPU up to 3, one per 16 GiB of free memory; 1 on the CPU)",
                     kLibraryFaces, "--engines", "engines_per_device"),
              1));
  add(bounded(option("jobs", OptionType::kInteger, kDefaultCorpusJobs,
                     "with several recordings: how many are decoded, and clustered, at once",
                     kLibraryFaces, "--jobs", "decode_threads"),
              1, kMaxCorpusJobs));
  add(noted(option("exclusive", OptionType::kFlag, false,
                   "at most one speaker at a time (turns suited to transcripts) in rttm, txt, srt "
                   "and vtt",
                   {true, true, true, false, true}, "--exclusive"),
            "Python: each result has both (Diarization.exclusive, to_format(exclusive=True)), and "
            "a Batch takes it per recording (submit_to(..., exclusive=True))"));
  {
    const auto names = result_format_names();
    add(choice("format", {names.begin(), names.end()}, std::string(kDefaultResultFormat),
               "output format: rttm, json, txt, srt or vtt (subtitles naming the speaker); with "
               "a transcript txt, srt and vtt are the speaker-labelled transcript and json adds "
               "it (the CLI's default is then txt, POST /v1/diarize's json)",
               {true, true, false, false, true}, "--format"));
    options.back().faces_note =
        "C and Python: every result writes every format (parley_result_format, "
        "Diarization.to_format), and a batch into a folder takes it per recording";
  }
  // How a transcript given with the recording is read and fused with its exclusive turns
  // (docs/transcripts.md); a server's job takes them with its transcript.
  {
    const std::string note =
        "C, Python and parley.distributed take no transcript: they write the diarization (every "
        "format), which `parley fuse` labels a transcript with";
    std::vector<std::string> formats = {"auto"};
    for (const std::string_view name : transcript::transcript_format_names()) {
      formats.emplace_back(name);
    }
    add(noted(choice("transcript_format", std::move(formats), "auto",
                     "format of the transcript: auto (from its content, else its file "
                     "extension), srt, vtt, ctm, whisper-cpp-json or openai-json",
                     kTranscriptFaces, "--transcript-format"),
              note));
    add(noted(bounded(option("gap_tolerance", OptionType::kNumber,
                             transcript::FusionOptions{}.gap_tolerance,
                             "seconds: a word between turns goes to the nearest turn this close, "
                             "else to the unknown speaker",
                             kTranscriptFaces, "--gap-tolerance"),
                      0.0),
              note));
  }
  // Who the speakers are (identity/, docs/identity.md). C and Python name speakers with a
  // library handle of their own: the path and the threshold are its functions' arguments.
  add(noted(option("voiceprints", OptionType::kPath, nullptr,
                   "speaker library (from `parley voiceprint add`): name the speakers that match "
                   "one of its voiceprints",
                   {true, false, false, true, false}, "--voiceprints"),
            "C: parley_library_open's path, then parley_identify per result; the server: "
            "`parley serve --voiceprints`, fixed when it starts; parley.distributed writes "
            "unnamed results (no library on its workers yet)"));
  add(noted(bounded(option("identify_threshold", OptionType::kNumber, kDefaultIdentifyThreshold,
                           "cosine score at or above which a speaker and a voiceprint match (-1 "
                           "to 1; `parley voiceprint evaluate` measures it on labelled "
                           "recordings)",
                           {true, false, false, true, false}, "--identify-threshold"),
                    -1.0, 1.0),
            "C: parley_identify's threshold (PARLEY_DEFAULT_IDENTIFY_THRESHOLD); the server: "
            "`parley serve --identify-threshold`; parley.distributed: as voiceprints"));
  add(noted(option("link_speakers", OptionType::kFlag, false,
                   "give one speaker the same global label in every recording of the run, and "
                   "write a speakers table (names from voiceprints win)",
                   kCliOnly, "--link-speakers"),
            "links the recordings of one command-line run (identity/speaker_linking.h); the C "
            "API, Python and parley.distributed have no corpus-wide linking call yet"));
  add(noted(option("speakers_table", OptionType::kPath, nullptr,
                   "where link_speakers writes its table (default: <out-dir>/speakers.tsv)",
                   kCliOnly, "--speakers-table"),
            "a file of the command-line run that link_speakers writes; no other face links"));
  // What a run records about itself (corpus/corpus_engine.h's trace).
  add(noted(option("trace", OptionType::kPath, nullptr,
                   "with several recordings (or --manifest): write a Chrome trace-event JSON "
                   "file of the run's stages per thread (Perfetto, chrome://tracing; "
                   "tools/trace_summary.py sums it per engine and device)",
                   kCliOnly, "--trace", "trace_file"),
            "a profiling aid of the command line's corpus runs (CorpusConfig::trace_file and "
            "EngineLayoutRequest::trace_file in the library); the C API, Python and "
            "parley.distributed do not offer it yet"));
  // What a server's job may set alone: the clustering's inputs and how its result is written
  // (with a transcript: how that is read and fused).
  // The networks' settings (step, embedding_mode) and the clustering method, whose PLDA the
  // server loads or not when it starts, are fixed for the server's life.
  for (OptionSpec& spec : options) {
    spec.per_job =
        spec.faces.server &&
        (spec.name == "num_speakers" || spec.name == "min_speakers" ||
         spec.name == "max_speakers" || spec.name == "exclusive" || spec.name == "format" ||
         spec.name == "transcript_format" || spec.name == "gap_tolerance");
  }
  // What each option sets; a row without an entry here fails every run (and the table's tests).
  const std::vector<std::pair<OptionTarget, std::vector<std::string_view>>> targets = {
      {OptionTarget::kModels, {"models_dir", "segmentation_model", "embedding_model", "plda_dir"}},
      {OptionTarget::kPlacement,
       {"provider", "provider_options", "device_id", "segmentation_provider", "embedding_provider",
        "force_gpu", "force_cpu"}},
      {OptionTarget::kOutput,
       {"step", "embedding_mode", "clustering", "ahc_threshold", "num_speakers", "min_speakers",
        "max_speakers", "gpu_float16", "sincnet_per_chunk", "embedding_features"}},
      {OptionTarget::kExecution,
       {"threads", "embedding_batch", "segmentation_batch", "segmentation_sessions", "no_streaming",
        "cuda_graph"}},
      {OptionTarget::kLayout, {"devices", "engines", "jobs"}},
      {OptionTarget::kFace, {"exclusive", "format", "transcript_format", "gap_tolerance"}},
      {OptionTarget::kIdentity,
       {"voiceprints", "identify_threshold", "link_speakers", "speakers_table"}},
      {OptionTarget::kDiagnostics, {"trace"}},
  };
  for (OptionSpec& spec : options) {
    const auto entry = std::find_if(targets.begin(), targets.end(), [&spec](const auto& target) {
      return std::find(target.second.begin(), target.second.end(), spec.name) !=
             target.second.end();
    });
    if (entry == targets.end()) fail("option table: '{}' has no target", spec.name);
    spec.target = entry->first;
  }
  return options;
}

std::string shown(std::string_view text) {
  return std::string(text.size() <= 24 ? text : text.substr(0, 21)) +
         (text.size() <= 24 ? "" : "...");
}

std::string range_problem(const OptionSpec& spec, double value, std::string_view text) {
  if ((spec.minimum && value < *spec.minimum) || (spec.maximum && value > *spec.maximum)) {
    if (spec.minimum && spec.maximum) {
      return fmt::format("must be {} to {} (got {})", *spec.minimum, *spec.maximum, text);
    }
    return spec.minimum ? fmt::format("must be at least {} (got {})", *spec.minimum, text)
                        : fmt::format("must be at most {} (got {})", *spec.maximum, text);
  }
  return "";
}

// A whole number as JSON; past what an int64 holds, the nearest value a uint64 or int64 holds
// (which every bound the engine checks refuses), never a value cast out of range.
nlohmann::json whole_number(double number) {
  if (number >= 0x1p64) return std::numeric_limits<std::uint64_t>::max();
  if (number >= 0x1p63) return static_cast<std::uint64_t>(number);
  if (number < -0x1p63) return std::numeric_limits<std::int64_t>::min();
  return static_cast<std::int64_t>(number);
}

// `text` as the option's value into `value`, or what is wrong with it.
std::string parse_text(const OptionSpec& spec, std::string_view text, nlohmann::json& value) {
  switch (spec.type) {
    case OptionType::kNumber:
    case OptionType::kInteger: {
      double number = 0.0;
      const char* end = text.data() + text.size();
      const auto [rest, error] = std::from_chars(text.data(), end, number);
      if (error != std::errc() || rest != end || !std::isfinite(number)) {
        return fmt::format("expects a number (got '{}')", shown(text));
      }
      if (spec.type == OptionType::kInteger && number != std::floor(number)) {
        return fmt::format("expects a whole number (got '{}')", shown(text));
      }
      if (auto problem = range_problem(spec, number, shown(text)); !problem.empty()) {
        return problem;
      }
      value = spec.type == OptionType::kInteger ? whole_number(number) : nlohmann::json(number);
      return "";
    }
    case OptionType::kChoice:
      if (std::find(spec.choices.begin(), spec.choices.end(), text) == spec.choices.end()) {
        return fmt::format("expected one of {} (got '{}')", fmt::join(spec.choices, ", "),
                           shown(text));
      }
      value = std::string(text);
      return "";
    case OptionType::kFlag:
      if (text == "true" || text == "1" || text == "on") {
        value = true;
      } else if (text == "false" || text == "0" || text == "off") {
        value = false;
      } else {
        return fmt::format("expected true or false (got '{}')", shown(text));
      }
      return "";
    case OptionType::kText:
    case OptionType::kPath:
      if (text.empty()) return "is empty (leave it out for the default)";
      value = std::string(text);
      return "";
    case OptionType::kList:
      if (text.empty()) return "is empty (leave it out for none)";
      value = nlohmann::json::array({std::string(text)});
      return "";
  }
  return "";
}

}  // namespace

std::string replace_underscores(std::string_view name) {
  std::string text(name);
  std::replace(text.begin(), text.end(), '_', '-');
  return text;
}

std::string_view OptionSpec::target_name() const {
  switch (target) {
    case OptionTarget::kOutput:
      return "output";
    case OptionTarget::kExecution:
      return "execution";
    case OptionTarget::kPlacement:
      return "placement";
    case OptionTarget::kLayout:
      return "layout";
    case OptionTarget::kModels:
      return "models";
    case OptionTarget::kFace:
      return "face";
    case OptionTarget::kIdentity:
      return "identity";
    case OptionTarget::kStream:
      return "stream";
    case OptionTarget::kDiagnostics:
      return "diagnostics";
  }
  return "face";
}

std::string_view OptionSpec::type_name() const {
  switch (type) {
    case OptionType::kNumber:
      return "number";
    case OptionType::kInteger:
      return "integer";
    case OptionType::kChoice:
      return "choice";
    case OptionType::kFlag:
      return "flag";
    case OptionType::kText:
      return "text";
    case OptionType::kPath:
      return "path";
    case OptionType::kList:
      return "list";
  }
  return "text";
}

nlohmann::json OptionSpec::to_json() const {
  nlohmann::ordered_json faces_json = {{"cli", faces.cli ? nlohmann::json(cli_flag) : nullptr},
                                       {"server", faces.server},
                                       {"c", faces.c ? nlohmann::json(c_field()) : nullptr},
                                       {"python", faces.python},
                                       {"dask", faces.dask}};
  nlohmann::ordered_json spec = {{"name", name},
                                 {"type", type_name()},
                                 {"default", default_value},
                                 {"minimum", minimum ? nlohmann::json(*minimum) : nullptr},
                                 {"maximum", maximum ? nlohmann::json(*maximum) : nullptr},
                                 {"choices", choices},
                                 {"help", help},
                                 {"faces", faces_json},
                                 {"config_field", config_field.empty() ? name : config_field},
                                 {"aliases", aliases},
                                 {"target", target_name()},
                                 {"faces_note", faces_note}};
  return nlohmann::json::parse(spec.dump());
}

nlohmann::json OptionSpec::parse(std::string_view text) const {
  nlohmann::json value;
  if (auto problem = parse_text(*this, text, value); !problem.empty()) {
    fail("{}: {}", name, problem);
  }
  return value;
}

std::string OptionSpec::check(std::string_view text) const {
  nlohmann::json value;
  return parse_text(*this, text, value);
}

void OptionSpec::check_value(const nlohmann::json& value) const {
  if (value.is_null()) return;
  switch (type) {
    case OptionType::kNumber:
    case OptionType::kInteger: {
      if (!value.is_number()) fail("{}: expects a number (got {})", name, value.dump());
      const double number = value.get<double>();
      if (!std::isfinite(number)) {
        // NaN and infinity are in no range: said as the range, where there is one.
        const std::string problem = range_problem(*this, number, fmt::format("{}", number));
        fail("{}: {}", name,
             problem.empty() || std::isnan(number)
                 ? (minimum && maximum
                        ? fmt::format("must be {} to {} (got {})", *minimum, *maximum, number)
                        : fmt::format("expects a number (got {})", number))
                 : problem);
      }
      if (type == OptionType::kInteger && number != std::floor(number)) {
        fail("{}: expects a whole number (got {})", name, value.dump());
      }
      if (auto problem = range_problem(*this, number, fmt::format("{}", number));
          !problem.empty()) {
        fail("{}: {}", name, problem);
      }
      return;
    }
    case OptionType::kChoice:
      if (!value.is_string() ||
          std::find(choices.begin(), choices.end(), value.get<std::string>()) == choices.end()) {
        fail("{}: expected one of {} (got {})", name, fmt::join(choices, ", "), value.dump());
      }
      return;
    case OptionType::kFlag:
      if (!value.is_boolean()) fail("{}: expected true or false (got {})", name, value.dump());
      return;
    case OptionType::kText:
    case OptionType::kPath:
      if (!value.is_string()) fail("{}: expects text (got {})", name, value.dump());
      return;
    case OptionType::kList:
      if (!value.is_array() || !std::all_of(value.begin(), value.end(),
                                            [](const auto& item) { return item.is_string(); })) {
        fail("{}: expects a list of texts (got {})", name, value.dump());
      }
      return;
  }
}

std::span<const OptionSpec> diarization_options() {
  static const std::vector<OptionSpec> options = make_options();
  return options;
}

const OptionSpec& diarization_option(std::string_view name) {
  for (const OptionSpec& spec : diarization_options()) {
    if (spec.name == name ||
        std::find(spec.aliases.begin(), spec.aliases.end(), name) != spec.aliases.end()) {
      return spec;
    }
  }
  fail("no diarization option '{}' (parley options --json lists them)", name);
}

std::string diarization_options_json() {
  nlohmann::json list = nlohmann::json::array();
  for (const OptionSpec& spec : diarization_options()) list.push_back(spec.to_json());
  return list.dump(2) + "\n";
}

}  // namespace parley::pipeline
