// Diarizes one recording with the embedding stage in exact mode and in the shared-trunk variants
// (stages/shared_trunk.h), writing each variant's RTTM, intermediates (raw embeddings,
// segmentations) and stage times, for scripts/compare-embedding-modes, which turns them into the
// tables of docs/embedding.md and docs/benchmarks.md. A measurement program, not a test.
//   embedding_mode_compare --segmentation M.onnx --embedding M.onnx --plda DIR --audio X.wav
//                          --out DIR [--step 1] [--threads N] [--variants exact,shared,...]
// Variants: exact; shared (the default shared mode: one pass, nearest grid, sliding mean);
// shared-aligned (one pass per chunk phase); shared-recording-mean (centred with the
// recording's mean).

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "core/error.h"
#include "core/progress.h"
#include "core/stage_timer.h"
#include "frames/output.h"
#include "pipeline/diarizer.h"
#include "wav_16k.h"

namespace {

parley::pipeline::DiarizationConfig variant_config(parley::pipeline::DiarizationConfig config,
                                                   const std::string& variant) {
  using parley::stages::EmbeddingMode;
  if (variant == "exact") {
    config.embedding_mode = EmbeddingMode::kExact;
    return config;
  }
  config.embedding_mode = EmbeddingMode::kShared;
  if (variant == "shared") return config;
  if (variant == "shared-aligned") {
    config.shared_trunk.exact_alignment = true;
    return config;
  }
  if (variant == "shared-recording-mean") {
    config.shared_trunk.mean = parley::stages::SharedTrunkMean::kRecording;
    return config;
  }
  parley::fail("unknown variant '{}': use exact, shared, shared-aligned or shared-recording-mean",
               variant);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"parley embedding modes: exact vs shared trunk"};
  std::string segmentation, embedding, plda, audio_path, out, uri;
  std::string variants = "exact,shared,shared-aligned,shared-recording-mean";
  parley::pipeline::DiarizationConfig config;
  app.add_option("--segmentation", segmentation)->required();
  app.add_option("--embedding", embedding)->required();
  app.add_option("--plda", plda)->required();
  app.add_option("--audio", audio_path)->required();
  app.add_option("--out", out, "folder for <variant>.rttm, <variant>/ and times.tsv")->required();
  app.add_option("--uri", uri, "recording id in the RTTMs (default: the file name's stem)");
  app.add_option("--threads", config.threads);
  app.add_option("--step", config.step_seconds);
  app.add_option("--variants", variants, "comma-separated");
  CLI11_PARSE(app, argc, argv);
  try {
    const std::vector<float> samples = parley::bench::read_wav_16k_mono(audio_path);
    if (uri.empty()) uri = std::filesystem::path(audio_path).stem().string();
    std::replace(uri.begin(), uri.end(), ' ', '_');
    std::filesystem::create_directories(out);
    std::ofstream times(std::filesystem::path(out) / "times.tsv", std::ios::app);
    std::stringstream list(variants);
    std::string variant;
    parley::Progress quiet(parley::Progress::Mode::kNever);
    while (std::getline(list, variant, ',')) {
      const auto variant_settings = variant_config(config, variant);
      parley::pipeline::Diarizer diarizer({segmentation, embedding, plda}, variant_settings);
      const auto start = std::chrono::steady_clock::now();
      const auto result =
          diarizer.diarize(samples, uri, quiet, std::filesystem::path(out) / variant);
      const double wall = parley::seconds_since(start);
      parley::eval::write_rttm(std::filesystem::path(out) / (variant + ".rttm"),
                               parley::frames::to_eval_turns(result.turns, uri));
      double embedding_seconds = 0.0;
      for (const auto& [stage, seconds] : result.stage_times.entries()) {
        if (stage == "embedding") embedding_seconds = seconds;
      }
      times << fmt::format("{}\t{}\t{:.1f}\t{:.3f}\t{:.3f}\t{}\n", uri, variant,
                           result.duration_seconds, embedding_seconds, wall, result.speaker_count);
      times.flush();
      fmt::print("{} {}: embedding {:.2f} s, total {:.2f} s, {} speakers\n", uri, variant,
                 embedding_seconds, wall, result.speaker_count);
      std::fflush(stdout);
    }
  } catch (const std::exception& error) {
    fmt::print(stderr, "embedding_mode_compare: {}\n", error.what());
    return 1;
  }
  return 0;
}
