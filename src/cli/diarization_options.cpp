#include "cli/diarization_options.h"

#include <cstdio>

#include "core/error.h"
#include "pipeline/output.h"

namespace parley::cli {

void add_diarization_flags(CLI::App& command, DiarizationFlags& flags) {
  command.add_option("--clustering", flags.clustering, "vbx (PLDA + VBx, pyannote's) or ahc")
      ->check(CLI::IsMember({"vbx", "ahc"}))
      ->capture_default_str();
  command
      .add_option("--embedding-mode", flags.embedding_mode,
                  "shared: the embedding network runs once over the whole recording and each "
                  "10 s chunk takes its slice (6-9x less embedding time); exact: once per "
                  "chunk, pyannote's definition (docs/embedding.md). Not used by recluster")
      ->check(CLI::IsMember({"exact", "shared"}))
      ->capture_default_str();
  command.add_option("--ahc-threshold", flags.ahc_threshold,
                     "AHC cosine-distance threshold (default 0.60; 0.65 for long recordings)");
  command.add_option("--num-speakers", flags.num_speakers, "exact number of speakers, when known")
      ->check(CLI::PositiveNumber);
  command.add_option("--min-speakers", flags.min_speakers, "at least this many speakers")
      ->check(CLI::PositiveNumber);
  command.add_option("--max-speakers", flags.max_speakers, "at most this many speakers")
      ->check(CLI::PositiveNumber);
  command
      .add_option("--format", flags.format,
                  "output format: rttm (default), json or txt; with a transcript srt, vtt, txt "
                  "(default) or json")
      ->check(CLI::IsMember({"rttm", "json", "txt", "srt", "vtt"}));
  command.add_flag("--exclusive", flags.exclusive,
                   "at most one speaker at a time (turns suited to transcripts)");
  command.add_option("-o,--out", flags.out, "output file, - for standard output")
      ->capture_default_str();
  command.add_option("--models", flags.models_dir,
                     "folder with the models (default: $PARLEY_MODELS, then the per-user cache)");
  command.add_flag("-q,--quiet", flags.quiet, "no progress or summary on standard error");
}

void apply_diarization_flags(const DiarizationFlags& flags, pipeline::DiarizationConfig& config) {
  config.clustering.method = cluster::parse_clustering_method(flags.clustering);
  config.embedding_mode = pipeline::parse_embedding_mode(flags.embedding_mode);
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
  const auto& turns = flags.exclusive ? result.exclusive_turns : result.turns;
  if (flags.format == "srt" || flags.format == "vtt") {
    fail(
        "--format {} writes a speaker-labelled transcript: pass --transcript FILE or --asr-cmd "
        "(or use rttm, json or txt)",
        flags.format);
  }
  if (flags.format == "json") return pipeline::format_json(result.turns, result.exclusive_turns);
  if (flags.format == "txt") return pipeline::format_text(turns);
  return pipeline::format_rttm(turns, result.uri);
}

void write_output(const std::string& text, const std::string& out) {
  if (out == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return;
  }
  pipeline::write_text_file(out, text);
}

}  // namespace parley::cli
