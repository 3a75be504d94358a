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
  std::string embedding_mode =
      pipeline::embedding_mode_name(pipeline::DiarizationConfig{}.embedding_mode);
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

// Applies the clustering and speaker-count flags to `config`.
void apply_diarization_flags(const DiarizationFlags& flags, pipeline::DiarizationConfig& config);

// The result in the chosen format (`uri` names the recording in RTTM).
std::string format_result(const pipeline::DiarizationResult& result, const DiarizationFlags& flags);

// Writes `text` to flags.out ("-" is standard output).
void write_output(const std::string& text, const std::string& out);

}  // namespace parley::cli
