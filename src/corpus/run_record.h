#pragma once
// Resumable runs into an output folder, for every face that writes one (`parley diarize
// --out-dir`, `parley eval --out`, parley_batch_submit_to in the C API, parley.distributed):
// the settings fingerprint, where each recording's output and record go, the skip/redo decision
// and the atomic writes. One implementation, so that a run of one face skips what another
// finished with the same settings.
//
// A recording's output is <out_dir>/<name>.<format>, its record <out_dir>/.parley/<name>.<format>
// .json (each format has a record of its own, so that outputs of several formats in one folder
// are each recognised). The record carries the fingerprint: the sha256 of file_settings(), that
// is run_settings() (what changes the output) plus the format and the audio file's path, size
// and modification time. A rerun skips a recording whose record has the same fingerprint and
// whose output is byte for byte the one the record describes.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "pipeline/diarizer.h"

namespace parley::corpus {

// Where the models run, as a fingerprint and a report name it: "cpu", "cuda" when both run
// there, or "segmentation cpu, embedding cuda". Resolved as the Diarizer resolves it
// (pipeline::plan_model_sessions), without making a session.
std::string describe_providers(runtime::ProviderId segmentation, runtime::ProviderId embedding);
std::string describe_providers(const pipeline::DiarizationModels& models,
                               const pipeline::DiarizationConfig& config);

// `config` routed as every face of a run into a folder routes it (the CLI, the C API,
// parley.distributed, `--print-layout`): the providers are in each output's fingerprint, so they
// must not depend on the recordings' lengths, which only the CLI knows; otherwise runs of two
// faces would redo each other's work. The cost model weighs ProviderPlacement's default length;
// `longest_audio_seconds` (0: unknown) is only checked against memory for the step.
pipeline::DiarizationConfig fingerprinted_placement(pipeline::DiarizationConfig config,
                                                    double longest_audio_seconds);

// The sha256 of the three model files the engine uses ("absent" for one that is not there):
// the plda folder's two files as one entry, "<plda.npz> <xvec_transform.npz>".
struct ModelDigests {
  std::string segmentation;
  std::string embedding;
  std::string plda;
};
ModelDigests model_digests(const pipeline::DiarizationModels& models);

// Everything that changes the turns of a recording: the output settings
// (pipeline::OutputSettings), the providers (each rounds its own way), `exclusive` (turns that
// may overlap or not) and the models' digests. How the run goes (threads, batches, sessions,
// streaming, devices: pipeline::ExecutionSettings) is left out, so that a rerun with other speed
// settings resumes.
// The parts as given; faces take cached_run_settings, which derives the providers.
nlohmann::ordered_json run_settings(const pipeline::OutputSettings& output,
                                    const ModelDigests& models, std::string_view providers,
                                    bool exclusive);

// The settings of a run of `config` on `models`: run_settings with the providers they resolve
// to (describe_providers of `models` and `config`, as the Diarizer and the engine layout resolve
// them) and `exclusive` false (an OutDirWriter sets its own). Every face fingerprints its runs
// with it (`parley diarize` and `parley eval`, the C API and through it Python and
// parley.distributed), so that the providers in a fingerprint are derived one way and a run of
// one face skips what another finished. From a cache of the process: hashing the models takes a
// while, and a caller (the C API, a Dask client) checks a whole archive against the same
// settings. The cache is keyed by the configuration and each model file's path, size and
// modification time, so a model replaced on disk is hashed again.
nlohmann::ordered_json cached_run_settings(const pipeline::DiarizationModels& models,
                                           const pipeline::DiarizationConfig& config);

// `time` as ISO 8601 in UTC with nanoseconds: 2026-11-26T17:25:03.123456789Z.
std::string utc_timestamp(std::filesystem::file_time_type time);

// `settings` with the audio file's absolute path (bytes that are not UTF-8 as \xNN), size and
// modification time (utc_timestamp, to the nanosecond: a changed file reads as changed).
nlohmann::ordered_json file_settings(const nlohmann::ordered_json& settings,
                                     const std::filesystem::path& audio);

// The sha256 of `settings` as compact JSON (text that is not UTF-8 replaced, never thrown on).
std::string settings_fingerprint(const nlohmann::ordered_json& settings);

// The folder of a run's records inside its output folder, <out_dir>/.parley: hidden, so that a
// listing of the folder shows the outputs. Every face names it through these.
inline constexpr std::string_view kRecordsFolderName = ".parley";
std::filesystem::path records_folder(const std::filesystem::path& out_dir);

// Where one recording's result and its record go.
struct RunDestination {
  std::filesystem::path output;  // <out_dir>/<name>.<format>
  std::filesystem::path record;  // <out_dir>/.parley/<name>.<format>.json

  RunDestination(const std::filesystem::path& out_dir, const std::string& name,
                 const std::string& format);
};

// The record `destination` holds when it holds a whole result made with `fingerprint`: the
// record says so and the output is byte for byte the one it describes. Unset otherwise (no
// record, an unreadable one, another fingerprint, an output edited or emptied since).
std::optional<nlohmann::json> finished_record(const RunDestination& destination,
                                              const std::string& fingerprint);

// One recording of a run into a folder: where it goes, its settings and fingerprint, and
// whether an earlier run finished it.
struct PlannedRecording {
  RunDestination destination;
  nlohmann::ordered_json settings;  // file_settings of the run's settings with "format"
  std::string fingerprint;
  bool finished = false;
  double audio_seconds = 0.0;  // the record's, when finished
};
// `settings` is run_settings(); the format is added to it here.
PlannedRecording plan_recording(const std::filesystem::path& out_dir, const std::string& name,
                                const std::string& format, const nlohmann::ordered_json& settings,
                                const std::filesystem::path& audio);

// The record of a finished recording: what a rerun checks (fingerprint, output_sha256) and what
// it took. `output_text` is the output's bytes.
nlohmann::ordered_json make_record(const PlannedRecording& planned, std::string_view output_text,
                                   const pipeline::DiarizationResult& result, double wall_seconds);

// Writes the output, then its record, each atomically (core/atomic_file.h): a reader sees each
// whole or absent, and a run killed between the two leaves an output without a record, which a
// rerun makes again. The records folder is made when missing.
void write_result(const RunDestination& destination, std::string_view output_text,
                  const nlohmann::ordered_json& record, const OutputOptions& options = {});

}  // namespace parley::corpus
