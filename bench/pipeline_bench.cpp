// Throughput of the whole pipeline on one machine, stage by stage, cold and warm: a benchmark
// program (results go to docs/benchmarks.md), not a test. It reads a 16 kHz mono WAV, repeats it
// to the requested length, and diarizes it twice with the same Diarizer.
//   pipeline_bench --segmentation M.onnx --embedding M.onnx --plda DIR --audio X.wav
//                  [--minutes 60] [--threads N] [--provider cpu|cuda|...]
//                  [--segmentation-provider cpu|...] [--embedding-batch 32] [--step 1]
//                  [--embedding-mode exact|shared] [--shared-alignment nearest|exact]
//                  [--shared-mean sliding|recording] [--shared-block-frames 12000]
//                  [--shared-pass-frames 2000] [--shared-pooling auto|host|graph]
//                  [--chunks-per-pass 256] [--tail-chunks-per-pass 64,192|none]
//                  [--rttm OUT.rttm] [--verbose]
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "core/error.h"
#include "core/progress.h"
#include "core/stage_timer.h"
#include "eval/rttm.h"
#include "frames/output.h"
#include "pipeline/diarizer.h"
#include "runtime/provider.h"
#include "runtime/shutdown.h"
#include "wav_16k.h"

namespace {

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

}  // namespace

int main(int argc, char** argv) {
  // Destroyed last: releases ONNX Runtime and its provider libraries in order before exit.
  const parley::runtime::OnnxRuntimeShutdownGuard onnx_runtime_shutdown;
  CLI::App app{"parley pipeline throughput benchmark"};
  std::string segmentation, embedding, plda, audio_path;
  std::string provider = "cpu", segmentation_provider = "cpu";
  double minutes = 60.0;
  parley::pipeline::DiarizationConfig config;
  app.add_option("--segmentation", segmentation)->required();
  app.add_option("--embedding", embedding)->required();
  app.add_option("--plda", plda)->required();
  app.add_option("--audio", audio_path)->required();
  app.add_option("--minutes", minutes);
  app.add_option("--threads", config.threads);
  app.add_option("--provider", provider, "embedding network's provider");
  app.add_option("--segmentation-provider", segmentation_provider);
  app.add_option("--embedding-batch", config.embedding_batch_size);
  app.add_option("--segmentation-batch", config.segmentation_batch_size);
  app.add_option("--segmentation-sessions", config.segmentation_accelerator_sessions,
                 "segmentation sessions feeding the accelerator at once");
  app.add_option("--step", config.step_seconds);
  bool no_streaming = false;
  app.add_flag("--no-streaming", no_streaming, "segment everything before embedding");
  std::string embedding_mode = parley::stages::embedding_mode_name(config.embedding_mode);
  std::string shared_alignment = "nearest", shared_mean = "sliding";
  app.add_option("--embedding-mode", embedding_mode)->check(CLI::IsMember({"exact", "shared"}));
  app.add_option("--shared-alignment", shared_alignment)
      ->check(CLI::IsMember({"nearest", "exact"}));
  app.add_option("--shared-mean", shared_mean)->check(CLI::IsMember({"sliding", "recording"}));
  app.add_option("--shared-block-frames", config.shared_trunk.block_frames);
  app.add_option("--shared-pass-frames", config.shared_trunk.pass_frames);
  std::string shared_pooling = "auto";
  app.add_option("--shared-pooling", shared_pooling, "auto|host|graph")
      ->check(CLI::IsMember({"auto", "host", "graph"}));
  app.add_option("--chunks-per-pass", config.shared_trunk.chunks_per_pass,
                 "shared mode, pooling in the graph: chunks per trunk pass");
  std::string tail_chunks = "default";
  app.add_option("--tail-chunks-per-pass", tail_chunks,
                 "shared mode, pooling in the graph: shorter passes for a range's rest, e.g. "
                 "64,192, or none");
  std::string tail_sessions = "start";
  app.add_option("--tail-sessions", tail_sessions,
                 "shared mode, pooling in the graph: the shorter passes' sessions made with the "
                 "models (start) or at their first pass (first-pass)")
      ->check(CLI::IsMember({"start", "first-pass"}));
  std::string rttm_path;
  app.add_option("--rttm", rttm_path, "write the warm run's RTTM here (to compare settings)");
  std::vector<std::string> embedding_options, segmentation_options;
  app.add_option("--embedding-provider-option", embedding_options, "key=value, repeatable");
  app.add_option("--segmentation-provider-option", segmentation_options, "key=value, repeatable");
  bool verbose = false;
  app.add_flag("--verbose", verbose, "debug log (where the embedding stage spends its time)");
  CLI11_PARSE(app, argc, argv);
  if (verbose) spdlog::set_level(spdlog::level::debug);
  try {
    config.streaming = !no_streaming;
    config.embedding_mode = parley::stages::parse_embedding_mode(embedding_mode);
    config.shared_trunk.exact_alignment = shared_alignment == "exact";
    config.shared_trunk.mean = parley::stages::parse_shared_trunk_mean(shared_mean);
    config.shared_trunk.pooling = parley::stages::parse_shared_trunk_pooling(shared_pooling);
    config.shared_trunk.tail_sessions = parley::stages::parse_tail_sessions(tail_sessions);
    if (tail_chunks == "none") {
      config.shared_trunk.tail_chunks_per_pass.clear();
    } else if (tail_chunks != "default") {
      config.shared_trunk.tail_chunks_per_pass.clear();
      for (const auto& part : CLI::detail::split(tail_chunks, ',')) {
        config.shared_trunk.tail_chunks_per_pass.push_back(std::stoul(part));
      }
    }
    config.embedding_provider_options = parley::runtime::parse_provider_options(embedding_options);
    config.segmentation_provider_options =
        parley::runtime::parse_provider_options(segmentation_options);
    config.embedding_provider = parley::runtime::parse_provider(provider);
    config.segmentation_provider = parley::runtime::parse_provider(segmentation_provider);
    const std::vector<float> once = parley::bench::read_wav_16k_mono(audio_path);
    const auto wanted = static_cast<std::size_t>(minutes * 60.0 * 16000.0);
    std::vector<float> samples;
    samples.reserve(wanted);
    while (samples.size() < wanted && !once.empty()) {
      const std::size_t take = std::min(once.size(), wanted - samples.size());
      samples.insert(samples.end(), once.begin(), once.begin() + static_cast<std::ptrdiff_t>(take));
    }
    const double audio_seconds = static_cast<double>(samples.size()) / 16000.0;

    const auto load_start = std::chrono::steady_clock::now();
    parley::pipeline::Diarizer diarizer({segmentation, embedding, plda}, config);
    const double load_seconds = parley::seconds_since(load_start);
    fmt::print("config: {}\naudio: {:.1f} s; model load {:.2f} s\n", config.to_string(),
               audio_seconds, load_seconds);
    parley::Progress quiet(parley::Progress::Mode::kNever);
    for (const char* run : {"cold", "warm"}) {
      const auto start = std::chrono::steady_clock::now();
      const auto result = diarizer.diarize(samples, "bench", quiet);
      const double wall = parley::seconds_since(start);
      std::string stages;
      for (const auto& [stage, seconds] : result.stage_times.entries()) {
        stages += fmt::format(" {}={:.2f}s", stage, seconds);
      }
      fmt::print(
          "{}: wall {:.2f} s, {:.1f}x real time, {} speakers, {} turns, peak RSS {:.0f} MiB;{}\n",
          run, wall, audio_seconds / wall, result.speaker_count, result.turns.size(),
          peak_rss_mib(), stages);
      std::fflush(stdout);
      if (!rttm_path.empty() && std::string(run) == "warm") {
        std::ofstream(rttm_path) << parley::eval::format_rttm(
            parley::frames::to_eval_turns(result.turns, result.uri));
      }
    }
  } catch (const std::exception& error) {
    fmt::print(stderr, "pipeline_bench: {}\n", error.what());
    return 1;
  }
  // Said here so that a device log shows the teardown order ran (the guard's later call is a
  // no-op): an abort after this line is not ONNX Runtime's environment.
  const auto shutdown = parley::runtime::shutdown_onnx_runtime();
  fmt::print("shutdown: ONNX Runtime {}, {} provider librar{} unregistered\n",
             shutdown.released ? "released" : "kept (" + shutdown.skipped_because + ")",
             shutdown.providers_unregistered, shutdown.providers_unregistered == 1 ? "y" : "ies");
  return 0;
}
