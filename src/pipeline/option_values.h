#pragma once
// Option values, by the option table's names (pipeline/option_table.h), applied to the engine's
// configuration in one place: every face (CLI, server, C, Python) hands its values here, so that
// equal values make equal configurations, and a new option is a table row plus a case here.
//   values: a JSON object {name: typed value} (OptionSpec::parse or check_value's types); an
//   absent name or null is the option's default.
#include <nlohmann/json.hpp>

#include <optional>

#include "pipeline/diarizer.h"
#include "transcript/fusion.h"
#include "transcript/transcript.h"

namespace parley::pipeline {

// Sets every kOutput, kExecution and kPlacement option of `values` in `config` (threads 0: all
// cores; the provider options together: force_gpu with force_cpu, device_id set twice, force_cpu
// against a per-model provider are refused), sets `config.placement`, then config.validate().
// Options of other targets (models, layout, the faces' own) are left for locate_models, the
// corpus layout and the faces. Fails "{option}: {problem}" in the options' names, also on a name
// the table does not know.
void apply_options(const nlohmann::json& values, DiarizationConfig& config);

// The placement options of `values` (provider, provider_options, device_id, force_gpu,
// force_cpu, segmentation_provider, embedding_provider) as one ProviderPlacement, with the rules
// they have together (apply_options sets it as config.placement): for a face or command that
// needs only where the models run (`parley warm-cache`). Fails "{option}: {problem}".
ProviderPlacement provider_placement(const nlohmann::json& values);

// The model files the values name (models_dir, segmentation_model, embedding_model, plda_dir),
// the rest found as locate_models(explicit_paths, models_dir) finds them.
DiarizationModels locate_models(const nlohmann::json& values);

// How a face reads a transcript and fuses it with the exclusive turns: the transcript_format
// and gap_tolerance of `values` (the table's defaults where absent or null). Every face that
// takes a transcript (`parley diarize --transcript`, `parley fuse`, a server's job) reads them
// here, so that equal values label the words alike. Fails "{option}: {problem}".
struct TranscriptOptions {
  std::optional<transcript::TranscriptFormat> format;  // none: detected ("auto")
  transcript::FusionOptions fusion;
};
TranscriptOptions transcript_options(const nlohmann::json& values);

}  // namespace parley::pipeline
