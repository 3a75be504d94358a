#pragma once
// Flags shared by `parley diarize` and `parley recluster`: clustering, speaker-count bounds,
// output format and destination. One definition so both commands spell them the same way.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "pipeline/diarizer.h"

namespace parley::cli {

struct DiarizationFlags {
  std::string clustering = "vbx";
  std::optional<double> ahc_threshold;
  std::optional<int> num_speakers;
  std::optional<int> min_speakers;
  std::optional<int> max_speakers;
  std::string format;  // rttm | json | txt, and srt | vtt with a transcript; empty: rttm
  bool exclusive = false;
  std::string out = "-";
  std::optional<std::string> models_dir;
  bool quiet = false;
};

void add_diarization_flags(CLI::App& command, DiarizationFlags& flags);

// Per-model provider flags of `parley diarize` (on top of --provider and friends).
struct ModelProviderFlags {
  std::string segmentation_provider;  // empty: --provider's choice
  std::string embedding_provider;
  std::size_t accelerator_segmentation_batch = 32;
};
void add_model_provider_flags(CLI::App& command, ModelProviderFlags& flags);

// The pipeline's routing request from --provider, --provider-option, --force-gpu/--force-cpu and
// the per-model flags; `expected_audio_seconds` is the longest input (0: unknown). Throws naming
// the flag when they contradict each other.
pipeline::ProviderRouting provider_routing(const runtime::ProviderChoice& choice,
                                           runtime::ForceMode force,
                                           const runtime::ProviderOptions& options,
                                           const ModelProviderFlags& flags,
                                           double expected_audio_seconds);

// Applies the clustering and speaker-count flags to `config`.
void apply_diarization_flags(const DiarizationFlags& flags, pipeline::DiarizationConfig& config);

// The result in the chosen format (`uri` names the recording in RTTM).
std::string format_result(const pipeline::DiarizationResult& result, const DiarizationFlags& flags);

// Writes `text` to flags.out ("-" is standard output).
void write_output(const std::string& text, const std::string& out);

}  // namespace parley::cli
