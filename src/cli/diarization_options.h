#pragma once
// Flags shared by the diarizing commands, so that every one spells them the same way:
//   DiarizationFlags (clustering, speaker-count bounds, --models, output): diarize, recluster,
//   and their clustering part in bench and eval;
//   EngineFlags (provider, step, threads, embedding mode, model files): every command that runs
//   the models (diarize, bench, eval), and only those: recluster starts from saved embeddings.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/provider_options.h"
#include "core/atomic_file.h"
#include "pipeline/diarizer.h"
#include "pipeline/option_table.h"
#include "runtime/device_memory.h"

namespace parley::cli {

struct DiarizationFlags {
  std::string clustering = "vbx";
  std::optional<double> ahc_threshold;
  std::optional<int> num_speakers;
  std::optional<int> min_speakers;
  std::optional<int> max_speakers;
  std::string format;  // rttm | json | txt | srt | vtt (pipeline/result_writer.h); empty: rttm
  bool exclusive = false;
  std::string out = "-";
  bool force = false;  // replace read-only output files
  std::optional<std::string> models_dir;
  bool quiet = false;
};

// Clustering, speaker counts, --models and --quiet, then the output flags (--format,
// --exclusive, --out, --force).
void add_diarization_flags(CLI::App& command, DiarizationFlags& flags);
// Only the clustering, speaker-count, --models and --quiet flags (commands that write their own
// outputs: bench, eval).
void add_clustering_flags(CLI::App& command, DiarizationFlags& flags);

// The option table's `name` (pipeline/option_table.h) as this command's flag: its spelling,
// help, checks and default (written into `target`, which the flag then fills).
CLI::Option* add_table_flag(CLI::App& command, std::string_view name, std::string& target);
CLI::Option* add_table_flag(CLI::App& command, std::string_view name, int& target);
CLI::Option* add_table_flag(CLI::App& command, std::string_view name, double& target);
CLI::Option* add_table_flag(CLI::App& command, std::string_view name, bool& target);
// The same for an option of another table (stream/stream_options.h: `parley stream`'s).
CLI::Option* add_spec_flag(CLI::App& command, const pipeline::OptionSpec& spec,
                           std::string& target);
CLI::Option* add_spec_flag(CLI::App& command, const pipeline::OptionSpec& spec, int& target);
CLI::Option* add_spec_flag(CLI::App& command, const pipeline::OptionSpec& spec, double& target);
CLI::Option* add_spec_flag(CLI::App& command, const pipeline::OptionSpec& spec, bool& target);

// Checks for numeric options in parley's words ("--num-speakers: must be at least 1 (got 0)");
// CLI11's own range checks print 1.79e308 as a 309-digit number. A failed check is a usage
// error (exit status 2, see main.cpp).
CLI::Validator number_at_least(double minimum);
CLI::Validator number_between(double minimum, double maximum);
CLI::Validator number_above(double bound);  // strictly more than `bound`
// The most --threads accepted: 4 per hardware thread (at least 4). More only adds sessions and
// memory without any speed.
int max_threads();
// The --threads check: 1 to max_threads(), saying that the bound is this machine's when it is hit.
CLI::Validator threads_check();

// How the models run: execution provider, chunk step, embedding mode, threads and explicit
// model files.
// Per-model provider flags of the commands that run the models (on top of --provider and friends).
struct ModelProviderFlags {
  std::string segmentation_provider;  // empty: --provider's choice
  std::string embedding_provider;
  // 0: automatic (pipeline's defaults; corpus::use_several_engines_layout with several engines)
  std::size_t accelerator_segmentation_batch = 0;
  int accelerator_segmentation_sessions = 0;
  bool accelerator_float16 = false;
};
void add_model_provider_flags(CLI::App& command, ModelProviderFlags& flags);

struct EngineFlags {
  ProviderArguments provider;
  ModelProviderFlags model_providers;
  double step = 1.0;
  std::string embedding_mode =
      stages::embedding_mode_name(pipeline::DiarizationConfig{}.embedding_mode);
  int threads = 0;  // 0: all cores
  std::size_t embedding_batch = pipeline::DiarizationConfig{}.embedding_batch_size;
  std::string segmentation_model;
  std::string embedding_model;
  std::string plda_dir;
  // The values of the table's other command-line options (those no field above or in
  // DiarizationFlags/CorpusFlags holds), by name, as given: registered in one loop, so that a new
  // option is a table row plus its case in pipeline/option_values.cpp.
  nlohmann::json extra = nlohmann::json::object();
};

// The engine's flags; every option of the table's cli face that has no field of its own is
// registered here from the table (its flag, help, default and checks) into `engine.extra`.
void add_engine_flags(CLI::App& command, EngineFlags& engine);

// How a transcript is read and fused (`parley diarize --transcript`, `parley fuse`): the table's
// transcript_format and gap_tolerance, registered from it (flag, help, default, checks).
struct TranscriptFlags {
  std::string format;          // the table's default written in by add_transcript_flags
  double gap_tolerance = 0.0;  // idem
};
void add_transcript_flags(CLI::App& command, TranscriptFlags& flags);
// The flags as option values by the table's names (pipeline::transcript_options reads them).
nlohmann::json transcript_values(const TranscriptFlags& flags);

// The model files: explicit flags first, then the model locator (--models, $PARLEY_MODELS, the
// per-user cache).
pipeline::DiarizationModels resolve_models(const EngineFlags& engine,
                                           const DiarizationFlags& flags);

// The flags as option values by the table's names (pipeline/option_values.h): what every face
// hands the engine.
nlohmann::json table_values(const EngineFlags& engine, const DiarizationFlags& flags);

// The pipeline configuration the flags describe (pipeline::apply_options of table_values): step,
// embedding mode, threads, streaming, clustering, speaker counts and the provider placement of both
// models; `expected_audio_seconds` is the longest input (0: unknown), which the placement weighs.
pipeline::DiarizationConfig diarization_config(const EngineFlags& engine,
                                               const DiarizationFlags& flags,
                                               double expected_audio_seconds = 0.0);

// Where each network will run, decided as the Diarizer decides it (pipeline::plan_model_sessions:
// placement resolved, no session created): for reports, labels and settings fingerprints.
struct ModelProviders {
  runtime::ProviderId segmentation = runtime::ProviderId::kCpu;
  runtime::ProviderOptions segmentation_options;
  runtime::ProviderId embedding = runtime::ProviderId::kCpu;
  runtime::ProviderOptions embedding_options;

  // "cpu", or "cuda" when both run there, or "segmentation cpu, embedding cuda".
  std::string describe() const;
  // The device memory reports watch (runtime::watched_device); nullopt on the host alone.
  std::optional<runtime::WatchedDevice> watched_device() const;
};
ModelProviders model_providers(const pipeline::DiarizationModels& models,
                               const pipeline::DiarizationConfig& config);

// The result in the chosen format (pipeline::format_result, the writer every face uses).
std::string format_result(const pipeline::DiarizationResult& result, const DiarizationFlags& flags);

// The recording id for an audio file (shared with the library's C API).
using frames::recording_uri;

// --force: replace output files that are read-only (every command that writes files takes it).
void add_force_flag(CLI::App& command, bool& force);

// Fails (before any model loads) when --format cannot describe what the command will write: rttm
// has no place for a transcript's words.
void check_format(const DiarizationFlags& flags, bool with_transcript);

// Writes `text` to `out` ("-" or empty: standard output) as core/atomic_file.h writes: a file is
// replaced whole or not at all, a device, FIFO or /dev/stdout is written in place, and a failed
// write to standard output fails.
void write_output(const std::string& text, const std::string& out,
                  const OutputOptions& options = {});

// Output destinations, checked before any work so that a typo costs nothing finished. Each fails
// naming `flag` with what output_problem() finds (core/atomic_file.h: a missing or unwritable
// folder, a folder where a file goes, a read-only file without --force); "-" or empty is
// standard output. prepare_output_folder fails unless `folder` is a folder or can be made one (it
// is made, with its parents).
void check_output_file(std::string_view flag, const std::string& out,
                       const OutputOptions& options = {});
void prepare_output_folder(std::string_view flag, const std::filesystem::path& folder);

}  // namespace parley::cli
