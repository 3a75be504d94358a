#include "cli/diarization_options.h"

#include <algorithm>
#include <cstdio>
#include <thread>

#include "core/error.h"
#include "models/model_locator.h"
#include "pipeline/output.h"
#include "runtime/provider_discovery.h"

namespace parley::cli {

void add_clustering_flags(CLI::App& command, DiarizationFlags& flags) {
  command.add_option("--clustering", flags.clustering, "vbx (PLDA + VBx, pyannote's) or ahc")
      ->check(CLI::IsMember({"vbx", "ahc"}))
      ->capture_default_str();
  command.add_option("--ahc-threshold", flags.ahc_threshold,
                     "AHC cosine-distance threshold (default 0.60; 0.65 for long recordings)");
  command.add_option("--num-speakers", flags.num_speakers, "exact number of speakers, when known")
      ->check(CLI::PositiveNumber);
  command.add_option("--min-speakers", flags.min_speakers, "at least this many speakers")
      ->check(CLI::PositiveNumber);
  command.add_option("--max-speakers", flags.max_speakers, "at most this many speakers")
      ->check(CLI::PositiveNumber);
  command.add_option("--models", flags.models_dir,
                     "folder with the models (default: $PARLEY_MODELS, then the per-user cache)");
  command.add_flag("-q,--quiet", flags.quiet, "no progress or summary on standard error");
}

void add_diarization_flags(CLI::App& command, DiarizationFlags& flags) {
  add_clustering_flags(command, flags);
  command
      .add_option("--format", flags.format,
                  "output format: rttm (default), json or txt; with a transcript srt, vtt, txt "
                  "(default) or json")
      ->check(CLI::IsMember({"rttm", "json", "txt", "srt", "vtt"}));
  command.add_flag("--exclusive", flags.exclusive,
                   "at most one speaker at a time (turns suited to transcripts)");
  command.add_option("-o,--out", flags.out, "output file, - for standard output")
      ->capture_default_str();
}

void add_engine_flags(CLI::App& command, EngineFlags& engine) {
  add_provider_options(command, engine.provider);
  command
      .add_option("--step", engine.step,
                  "seconds between 10 s analysis windows: 1 (pyannote) or 2 (faster)")
      ->capture_default_str();
  command.add_option("--threads", engine.threads,
                     "CPU threads (default: all cores); output is the same for any value");
  command.add_option("--segmentation-model", engine.segmentation_model,
                     "segmentation .onnx (default: found through --models)");
  command.add_option("--embedding-model", engine.embedding_model,
                     "speaker-embedding .onnx (default: found through --models)");
  command.add_option(
      "--plda", engine.plda_dir,
      "folder with plda.npz and xvec_transform.npz (default: found through --models)");
}

pipeline::DiarizationModels resolve_models(const EngineFlags& engine,
                                           const DiarizationFlags& flags) {
  const models::ModelLocator locator(
      models::Registry::builtin(),
      flags.models_dir ? std::optional<std::filesystem::path>(*flags.models_dir) : std::nullopt);
  pipeline::DiarizationModels paths;
  paths.segmentation = engine.segmentation_model.empty()
                           ? locator.locate(models::Role::kSegmentation).path
                           : std::filesystem::path(engine.segmentation_model);
  paths.embedding = engine.embedding_model.empty() ? locator.locate(models::Role::kEmbedding).path
                                                   : std::filesystem::path(engine.embedding_model);
  paths.plda = engine.plda_dir.empty() ? locator.locate(models::Role::kPlda).path.parent_path()
                                       : std::filesystem::path(engine.plda_dir);
  return paths;
}

pipeline::DiarizationConfig diarization_config(const EngineFlags& engine,
                                               const DiarizationFlags& flags) {
  pipeline::DiarizationConfig config;
  config.step_seconds = engine.step;
  config.threads = engine.threads > 0
                       ? engine.threads
                       : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  apply_diarization_flags(flags, config);
  const ProviderSelection selection = provider_selection(engine.provider);
  if (selection.force != runtime::ForceMode::kCpu) {
    const runtime::ProviderResolution resolution =
        runtime::resolve_provider(selection.choice, runtime::provider_statuses());
    if (selection.force == runtime::ForceMode::kGpu && !resolution.accelerator) {
      fail("--force-gpu: no GPU provider is usable here: {} (`parley providers` explains)",
           resolution.problem);
    }
    config.embedding_provider = resolution.provider;
    config.embedding_provider_options = selection.options;
  }
  return config;
}

void apply_diarization_flags(const DiarizationFlags& flags, pipeline::DiarizationConfig& config) {
  config.clustering.method = cluster::parse_clustering_method(flags.clustering);
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

std::string recording_uri(const std::filesystem::path& audio) {
  std::string uri = audio.stem().string();
  std::replace(uri.begin(), uri.end(), ' ', '_');
  return uri.empty() ? "audio" : uri;
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
