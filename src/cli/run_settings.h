#pragma once
// What makes a recording's result what it is, for the commands that resume: `parley eval --out`
// and `parley diarize --out-dir` skip a recording whose earlier result was made with the same
// settings and audio (eval::settings_fingerprint of file_settings()).
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/diarization_options.h"
#include "pipeline/diarizer.h"

namespace parley::cli {

// Everything that changes the turns of a recording: config.output(), the providers, the models'
// digests. How it runs (config.execution()) is left out, so that a rerun with other threads,
// batches or devices resumes.
nlohmann::ordered_json run_settings(const pipeline::DiarizationConfig& config,
                                    const pipeline::DiarizationModels& models,
                                    const ModelProviders& providers, bool exclusive);

// `settings` with the audio file's absolute path (bytes that are not UTF-8 as \xNN), size and
// modification time (utc_timestamp, to the nanosecond: a changed file reads as changed).
// `time` as ISO 8601 in UTC with nanoseconds: 2026-11-26T17:25:03.123456789Z.
std::string utc_timestamp(std::filesystem::file_time_type time);

nlohmann::ordered_json file_settings(const nlohmann::ordered_json& settings,
                                     const std::filesystem::path& audio);

}  // namespace parley::cli
