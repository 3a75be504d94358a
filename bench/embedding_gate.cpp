// The embedding gate of a precision or graph change (docs/benchmarks.md, "The embedding gate"):
// the embedding stage of a candidate (another provider, float16, another mode) against the CPU
// float32 reference, both fed the SAME binarized segmentations, those of the reference's own
// run. Comparing whole pipelines mixes in segmentation: a mask that moves by one frame changes
// which frames an embedding pools, and its cosine falls far below the gate even when both
// embedding stages compute alike. Here only the embedding arithmetic differs.
//   embedding_gate --segmentation M.onnx --embedding M.onnx --plda DIR --audio X.wav --out DIR
//                  [--provider cpu|cuda|...] [--embedding-provider-option K=V]... [--float16]
//                  [--candidate-embedding-mode exact|shared] [--embedding-mode exact|shared]
//                  [--step 1] [--threads N] [--min-cosine 0.999] [--max-der 0.001]
// Writes OUT/reference/ (the CPU run's intermediates, as `--save-intermediates` keeps them),
// OUT/candidate/ (the same masks with the candidate's raw embeddings:
// tools/compare_intermediates.py OUT/reference OUT/candidate compares them too),
// OUT/reference.rttm, OUT/candidate.rttm (the candidate's embeddings clustered as the reference's
// are) and OUT/gate.json. Exit status 0 when the gate passes: the same (chunk, speaker) pairs have
// embeddings, every cosine is at least
// --min-cosine, and the candidate's RTTM scored against the reference's (collar 0, overlap
// scored) has a DER of at most --max-der; 1 when it fails; 2 on an error.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/progress.h"
#include "core/stage_timer.h"
#include "eval/der.h"
#include "eval/rttm.h"
#include "frames/output.h"
#include "pipeline/diarizer.h"
#include "pipeline/intermediates_io.h"
#include "runtime/provider.h"
#include "runtime/shutdown.h"
#include "wav_16k.h"

namespace {

struct EmbeddingAgreement {
  std::size_t pairs = 0;            // (chunk, speaker) pairs with an embedding in both
  std::size_t pairs_in_one = 0;     // with an embedding in one only
  std::size_t below_threshold = 0;  // pairs whose cosine is under the gate's
  double min_cosine = 1.0;
  double mean_cosine = 1.0;
  double max_abs_difference = 0.0;
  bool bit_identical = true;  // every value, NaNs included, the same bits
};

bool finite(std::span<const float> values) {
  return std::all_of(values.begin(), values.end(), [](float v) { return std::isfinite(v); });
}

// Pairs without speech have no embedding (NaN, as in pyannote): only pairs with one in both
// are compared; a pair with one in only one side is a difference of masks or a broken stage.
EmbeddingAgreement compare_embeddings(const parley::NdArray<float>& reference,
                                      const parley::NdArray<float>& candidate, double min_cosine) {
  if (reference.shape() != candidate.shape()) {
    parley::fail("the embeddings differ in shape ({} against {} values)", reference.size(),
                 candidate.size());
  }
  EmbeddingAgreement agreement;
  const std::size_t dimension = reference.dim(2);
  double cosine_sum = 0.0;
  for (std::size_t start = 0; start < reference.size(); start += dimension) {
    const std::span a(reference.data() + start, dimension);
    const std::span b(candidate.data() + start, dimension);
    for (std::size_t d = 0; d < dimension; ++d) {
      const bool same_nan = std::isnan(a[d]) && std::isnan(b[d]);
      if (!same_nan && a[d] != b[d]) agreement.bit_identical = false;
    }
    const bool in_a = finite(a), in_b = finite(b);
    if (in_a != in_b) ++agreement.pairs_in_one;
    if (!in_a || !in_b) continue;
    double dot = 0.0, norm_a = 0.0, norm_b = 0.0;
    for (std::size_t d = 0; d < dimension; ++d) {
      dot += static_cast<double>(a[d]) * b[d];
      norm_a += static_cast<double>(a[d]) * a[d];
      norm_b += static_cast<double>(b[d]) * b[d];
      agreement.max_abs_difference =
          std::max(agreement.max_abs_difference, std::abs(static_cast<double>(a[d]) - b[d]));
    }
    // Two zero vectors are the same embedding; one zero vector against another is not.
    const double norms = std::sqrt(norm_a) * std::sqrt(norm_b);
    const double cosine = norms > 0.0 ? dot / norms : (norm_a == norm_b ? 1.0 : 0.0);
    ++agreement.pairs;
    cosine_sum += cosine;
    agreement.min_cosine = std::min(agreement.min_cosine, cosine);
    if (cosine < min_cosine) ++agreement.below_threshold;
  }
  agreement.mean_cosine =
      agreement.pairs > 0 ? cosine_sum / static_cast<double>(agreement.pairs) : 1.0;
  return agreement;
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

int main(int argc, char** argv) {
  // Destroyed last: releases ONNX Runtime and its provider libraries in order before exit.
  const parley::runtime::OnnxRuntimeShutdownGuard onnx_runtime_shutdown;
  CLI::App app{"parley embedding gate: a candidate's embeddings against the CPU's, same masks"};
  std::string segmentation, embedding, plda, audio_path, out, uri;
  std::string provider = "cpu";
  std::vector<std::string> provider_options;
  bool float16 = false;
  double min_cosine = 0.999, max_der = 0.001;
  parley::pipeline::DiarizationConfig reference_config;
  std::string embedding_mode = parley::stages::embedding_mode_name(reference_config.embedding_mode);
  std::string candidate_mode;
  app.add_option("--segmentation", segmentation)->required();
  app.add_option("--embedding", embedding)->required();
  app.add_option("--plda", plda)->required();
  app.add_option("--audio", audio_path, "16 kHz mono WAV")->required();
  app.add_option("--out", out, "folder for the two runs' intermediates, RTTMs and gate.json")
      ->required();
  app.add_option("--uri", uri, "recording id in the RTTMs (default: the file name's stem)");
  app.add_option("--provider", provider, "the candidate's embedding provider");
  app.add_option("--embedding-provider-option", provider_options, "key=value, repeatable");
  app.add_flag("--float16", float16, "the candidate's embedding network in float16 (accelerators)");
  app.add_option("--embedding-mode", embedding_mode, "both runs")
      ->check(CLI::IsMember({"exact", "shared"}));
  app.add_option("--candidate-embedding-mode", candidate_mode,
                 "the candidate's alone (default: --embedding-mode)")
      ->check(CLI::IsMember({"exact", "shared"}));
  app.add_option("--step", reference_config.step_seconds);
  app.add_option("--threads", reference_config.threads);
  app.add_option("--min-cosine", min_cosine, "the gate's least cosine of a pair");
  app.add_option("--max-der", max_der, "the gate's largest DER of the candidate's RTTM (0.001)");
  CLI11_PARSE(app, argc, argv);
  try {
    reference_config.embedding_mode = parley::stages::parse_embedding_mode(embedding_mode);
    parley::pipeline::DiarizationConfig candidate_config = reference_config;
    candidate_config.embedding_provider = parley::runtime::parse_provider(provider);
    candidate_config.embedding_provider_options =
        parley::runtime::parse_provider_options(provider_options);
    candidate_config.accelerator_float16 = float16;
    if (!candidate_mode.empty()) {
      candidate_config.embedding_mode = parley::stages::parse_embedding_mode(candidate_mode);
    }
    const std::vector<float> samples = parley::bench::read_wav_16k_mono(audio_path);
    if (uri.empty()) uri = std::filesystem::path(audio_path).stem().string();
    std::replace(uri.begin(), uri.end(), ' ', '_');
    const std::filesystem::path folder(out);
    std::filesystem::create_directories(folder);
    parley::Progress quiet(parley::Progress::Mode::kNever);

    // The candidate's sessions first: a provider that cannot start fails before the CPU run.
    const parley::pipeline::DiarizationModels models{segmentation, embedding, plda};
    parley::pipeline::Diarizer candidate_diarizer(models, candidate_config);
    // The reference: the whole pipeline on the CPU, its masks read back as saved.
    parley::pipeline::Diarizer reference(models, reference_config);
    const auto reference_result = reference.diarize(samples, uri, quiet, folder / "reference");
    parley::pipeline::DiarizationIntermediates saved =
        parley::pipeline::read_model_intermediates(folder / "reference");

    // The candidate: its embedding stage alone on those masks, clustered by the reference's
    // (host) code, so that a different RTTM comes from the embeddings.
    const parley::pipeline::DiarizationIntermediates candidate =
        candidate_diarizer.embed_given_segmentations(samples, saved.segmentations);
    parley::pipeline::write_model_intermediates(folder / "candidate", candidate, uri);
    parley::StageTimes times;
    const auto candidate_result = reference.cluster(candidate, uri, times);

    const auto reference_turns = parley::frames::to_eval_turns(reference_result.turns, uri);
    const auto candidate_turns = parley::frames::to_eval_turns(candidate_result.turns, uri);
    parley::eval::write_rttm(folder / "reference.rttm", reference_turns);
    parley::eval::write_rttm(folder / "candidate.rttm", candidate_turns);
    const bool rttms_identical =
        read_text(folder / "reference.rttm") == read_text(folder / "candidate.rttm");
    const parley::eval::FileScore score =
        parley::eval::score_file(uri, reference_turns, candidate_turns, nullptr,
                                 parley::eval::scoring_options(parley::eval::Convention::strict));
    const double der = score.times.der();

    const EmbeddingAgreement agreement =
        compare_embeddings(saved.embeddings, candidate.embeddings, min_cosine);
    const bool passes =
        agreement.pairs_in_one == 0 && agreement.below_threshold == 0 && der <= max_der;
    const nlohmann::json report = {{"reference", reference_config.to_string()},
                                   {"candidate", candidate_config.to_string()},
                                   {"pairs", agreement.pairs},
                                   {"pairs_in_one_only", agreement.pairs_in_one},
                                   {"pairs_below_min_cosine", agreement.below_threshold},
                                   {"min_cosine", agreement.min_cosine},
                                   {"mean_cosine", agreement.mean_cosine},
                                   {"max_abs_difference", agreement.max_abs_difference},
                                   {"embeddings_bit_identical", agreement.bit_identical},
                                   {"reference_speakers", reference_result.speaker_count},
                                   {"candidate_speakers", candidate_result.speaker_count},
                                   {"der_against_reference", der},
                                   {"rttms_identical", rttms_identical},
                                   {"gate", {{"min_cosine", min_cosine}, {"max_der", max_der}}},
                                   {"passes", passes}};
    std::ofstream(folder / "gate.json") << report.dump(2) << '\n';
    fmt::print(
        "{}: {} pairs, min cosine {:.6f}, mean {:.6f}, max |difference| {:.3g}{}; {} pairs with an "
        "embedding in one run only; speakers {} and {}, DER against the reference {:.3f} %{}: {} "
        "the gate (cosine >= {}, DER <= {:.3f} %)\n",
        uri, agreement.pairs, agreement.min_cosine, agreement.mean_cosine,
        agreement.max_abs_difference, agreement.bit_identical ? " (bit-identical)" : "",
        agreement.pairs_in_one, reference_result.speaker_count, candidate_result.speaker_count,
        100.0 * der, rttms_identical ? ", RTTMs identical" : "", passes ? "passes" : "FAILS",
        min_cosine, 100.0 * max_der);
    std::fflush(stdout);
    return passes ? 0 : 1;
  } catch (const std::exception& error) {
    fmt::print(stderr, "embedding_gate: {}\n", error.what());
    return 2;
  }
}
