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
//                  [--candidate-pooling auto|host|graph] [--candidate-features auto|host|graph]
//                  [--reference-pooling auto|host|graph] [--reference-features auto|host|graph]
//                  [--worst 10]
// --candidate-pooling/--candidate-features force where the candidate's shared trunk pools and
// computes its features, whatever its provider: `--provider cpu --candidate-pooling graph
// --candidate-features graph` runs on the CPU the path an accelerator takes by default (auto),
// so a pair that fails on the GPU can be looked at without one. --reference-pooling/
// --reference-features put the CPU reference on such a path too (the candidate follows unless
// told otherwise): the accelerator against the CPU on one path measures its arithmetic alone,
// without the paths' own difference at the recording's end (bench/gpu/README.md, step 5).
// Writes OUT/reference/ (the CPU run's intermediates, as `--save-intermediates` keeps them),
// OUT/candidate/ (the same masks with the candidate's raw embeddings:
// tools/compare_intermediates.py OUT/reference OUT/candidate compares them too),
// OUT/reference.rttm, OUT/candidate.rttm (the candidate's embeddings clustered as the reference's
// are) and OUT/gate.json (with the --worst pairs of lowest cosine: chunk, its start, speaker,
// what the mask pooled). Exit status 0 when the gate passes: the same (chunk, speaker) pairs have
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
#include "core/sample_rate.h"
#include "core/stage_timer.h"
#include "eval/der.h"
#include "eval/rttm.h"
#include "frames/output.h"
#include "pipeline/diarizer.h"
#include "pipeline/intermediates_io.h"
#include "runtime/provider.h"
#include "runtime/shutdown.h"
#include "stages/embedding.h"
#include "stages/fbank.h"
#include "stages/stats_pooling.h"
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
  struct Pair {
    std::size_t chunk = 0, speaker = 0;
    double cosine = 1.0, max_abs_difference = 0.0;
  };
  std::vector<Pair> worst;  // the lowest cosines, lowest first
};

bool finite(std::span<const float> values) {
  return std::all_of(values.begin(), values.end(), [](float v) { return std::isfinite(v); });
}

// Pairs without speech have no embedding (NaN, as in pyannote): only pairs with one in both
// are compared; a pair with one in only one side is a difference of masks or a broken stage.
EmbeddingAgreement compare_embeddings(const parley::NdArray<float>& reference,
                                      const parley::NdArray<float>& candidate, double min_cosine,
                                      std::size_t worst) {
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
    double dot = 0.0, norm_a = 0.0, norm_b = 0.0, pair_difference = 0.0;
    for (std::size_t d = 0; d < dimension; ++d) {
      dot += static_cast<double>(a[d]) * b[d];
      norm_a += static_cast<double>(a[d]) * a[d];
      norm_b += static_cast<double>(b[d]) * b[d];
      pair_difference = std::max(pair_difference, std::abs(static_cast<double>(a[d]) - b[d]));
    }
    agreement.max_abs_difference = std::max(agreement.max_abs_difference, pair_difference);
    // Two zero vectors are the same embedding; one zero vector against another is not.
    const double norms = std::sqrt(norm_a) * std::sqrt(norm_b);
    const double cosine = norms > 0.0 ? dot / norms : (norm_a == norm_b ? 1.0 : 0.0);
    ++agreement.pairs;
    cosine_sum += cosine;
    agreement.min_cosine = std::min(agreement.min_cosine, cosine);
    if (cosine < min_cosine) ++agreement.below_threshold;
    const std::size_t pair = start / dimension;
    agreement.worst.push_back(
        {pair / reference.dim(1), pair % reference.dim(1), cosine, pair_difference});
  }
  const auto lower = [](const EmbeddingAgreement::Pair& x, const EmbeddingAgreement::Pair& y) {
    return x.cosine < y.cosine ||
           (x.cosine == y.cosine &&
            (x.chunk < y.chunk || (x.chunk == y.chunk && x.speaker < y.speaker)));
  };
  const std::size_t kept = std::min(worst, agreement.worst.size());
  std::partial_sort(agreement.worst.begin(),
                    agreement.worst.begin() + static_cast<std::ptrdiff_t>(kept),
                    agreement.worst.end(), lower);
  agreement.worst.resize(kept);
  agreement.mean_cosine =
      agreement.pairs > 0 ? cosine_sum / static_cast<double>(agreement.pairs) : 1.0;
  return agreement;
}

// What the reference pooled for one (chunk, speaker): its binarized frames, those where it
// speaks alone, the mask pooled (stages/embedding.h, select_embedding_masks) and that mask
// resampled onto the trunk's frames of a chunk, where the statistics are taken.
nlohmann::json describe_pair(const EmbeddingAgreement::Pair& pair,
                             const parley::pipeline::DiarizationIntermediates& saved,
                             const parley::NdArray<float>& masks, std::size_t trunk_frames,
                             double min_active_ratio) {
  const std::size_t frames = saved.segmentations.dim(1);
  const std::size_t speakers = saved.segmentations.dim(2);
  std::size_t active = 0, alone = 0;
  for (std::size_t f = 0; f < frames; ++f) {
    std::size_t speaking = 0;
    for (std::size_t s = 0; s < speakers; ++s) {
      if (saved.segmentations(pair.chunk, f, s) > 0.0f) ++speaking;
    }
    if (saved.segmentations(pair.chunk, f, pair.speaker) > 0.0f) {
      ++active;
      if (speaking == 1) ++alone;
    }
  }
  const std::span<const float> mask(masks.data() + (pair.chunk * speakers + pair.speaker) * frames,
                                    frames);
  double mask_sum = 0.0;
  for (const float w : mask) mask_sum += w;
  std::vector<float> weights(trunk_frames);
  const parley::stages::PairWeights pooled = parley::stages::resample_pair_weights(
      mask, parley::stages::nearest_source_indices(frames, trunk_frames), weights);
  double weight_sum = 0.0;
  for (const float w : weights) weight_sum += w;
  // The first and last trunk frames the statistics see, to tell a mask at a chunk's edge.
  std::size_t first_weighted = trunk_frames, last_weighted = 0;
  for (std::size_t t = 0; t < trunk_frames; ++t) {
    if (weights[t] == 0.0f) continue;
    first_weighted = std::min(first_weighted, t);
    last_weighted = t;
  }
  nlohmann::json out = {
      {"chunk", pair.chunk},
      {"chunk_start_seconds",
       saved.chunks.start() + static_cast<double>(pair.chunk) * saved.chunks.step()},
      {"last_chunk", pair.chunk + 1 == saved.segmentations.dim(0)},
      {"speaker", pair.speaker},
      {"cosine", pair.cosine},
      {"max_abs_difference", pair.max_abs_difference},
      {"active_frames", active},
      {"frames_speaking_alone", alone},
      {"mask_weight_sum", mask_sum},
      {"trunk_frames_weighted", pooled.weighted_frames},
      {"trunk_weight_sum", weight_sum}};
  // Every pair with an embedding is assigned to a centroid; those with enough frames spoken
  // alone also train the clustering (cluster/assignment.cpp, select_training_embeddings).
  out["trains_clustering"] =
      static_cast<double>(alone) >= min_active_ratio * static_cast<double>(frames);
  if (pooled.weighted_frames > 0) {
    out["first_trunk_frame_weighted"] = first_weighted;
    out["last_trunk_frame_weighted"] = last_weighted;
  }
  return out;
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
  std::string candidate_pooling, candidate_features, reference_pooling, reference_features;
  std::size_t worst = 10;
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
  app.add_option("--candidate-pooling", candidate_pooling,
                 "where the candidate's shared trunk pools, whatever its provider (default: its "
                 "own, auto)")
      ->check(CLI::IsMember({"auto", "host", "graph"}));
  app.add_option("--candidate-features", candidate_features,
                 "where the candidate's graph-pooled passes compute features (default: auto)")
      ->check(CLI::IsMember({"auto", "host", "graph"}));
  app.add_option("--reference-pooling", reference_pooling,
                 "where the CPU reference's shared trunk pools (default auto: on the host); the "
                 "candidate follows unless --candidate-pooling")
      ->check(CLI::IsMember({"auto", "host", "graph"}));
  app.add_option("--reference-features", reference_features,
                 "where the reference's graph-pooled passes compute features (default auto); the "
                 "candidate follows unless --candidate-features")
      ->check(CLI::IsMember({"auto", "host", "graph"}));
  app.add_option("--worst", worst, "pairs of lowest cosine listed in gate.json");
  app.add_option("--step", reference_config.step_seconds);
  app.add_option("--threads", reference_config.threads);
  app.add_option("--min-cosine", min_cosine, "the gate's least cosine of a pair");
  app.add_option("--max-der", max_der, "the gate's largest DER of the candidate's RTTM (0.001)");
  CLI11_PARSE(app, argc, argv);
  try {
    reference_config.embedding_mode = parley::stages::parse_embedding_mode(embedding_mode);
    if (!reference_pooling.empty()) {
      reference_config.shared_trunk.pooling =
          parley::stages::parse_shared_trunk_pooling(reference_pooling);
    }
    if (!reference_features.empty()) {
      reference_config.shared_trunk.features =
          parley::stages::parse_shared_trunk_features(reference_features);
    }
    parley::pipeline::DiarizationConfig candidate_config = reference_config;
    candidate_config.embedding_provider = parley::runtime::parse_provider(provider);
    candidate_config.embedding_provider_options =
        parley::runtime::parse_provider_options(provider_options);
    candidate_config.accelerator_float16 = float16;
    if (!candidate_mode.empty()) {
      candidate_config.embedding_mode = parley::stages::parse_embedding_mode(candidate_mode);
    }
    if (!candidate_pooling.empty()) {
      candidate_config.shared_trunk.pooling =
          parley::stages::parse_shared_trunk_pooling(candidate_pooling);
    }
    if (!candidate_features.empty()) {
      candidate_config.shared_trunk.features =
          parley::stages::parse_shared_trunk_features(candidate_features);
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
        compare_embeddings(saved.embeddings, candidate.embeddings, min_cosine, worst);
    // The masks as the pipeline selects them (pipeline/network_placement.cpp): exclude_overlap
    // from the configuration, the rest EmbeddingConfig's defaults.
    parley::stages::EmbeddingConfig embedding_config;
    embedding_config.exclude_overlap = reference_config.embedding_exclude_overlap;
    const std::size_t chunk_samples =
        static_cast<std::size_t>(std::lround(saved.chunks.duration() * parley::kSampleRate));
    const parley::NdArray<float> masks = parley::stages::select_embedding_masks(
        saved.segmentations, embedding_config.exclude_overlap,
        parley::stages::min_clean_frames(saved.segmentations.dim(1),
                                         embedding_config.min_num_samples, chunk_samples));
    const std::size_t trunk_frames =
        (parley::stages::Fbank(embedding_config.fbank).num_frames(chunk_samples) +
         reference_config.shared_trunk.time_stride - 1) /
        reference_config.shared_trunk.time_stride;
    const auto& clustering = reference_config.clustering;
    const double min_active_ratio = clustering.method == parley::cluster::ClusteringMethod::kVbx
                                        ? clustering.vbx.min_active_ratio
                                        : clustering.ahc.min_active_ratio;
    nlohmann::json worst_pairs = nlohmann::json::array();
    for (const auto& pair : agreement.worst) {
      worst_pairs.push_back(describe_pair(pair, saved, masks, trunk_frames, min_active_ratio));
    }
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
                                   {"duration_seconds", saved.duration_seconds},
                                   {"chunks", saved.segmentations.dim(0)},
                                   {"worst_pairs", worst_pairs},
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
