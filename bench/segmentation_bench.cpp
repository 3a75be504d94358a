// Measures segmentation throughput (chunks per second) for one model and configuration, on the
// 10 s chunks (1 s step) of a real recording. Used for the numbers in docs/segmentation.md:
//   build/bench/segmentation_bench --model M --threads N --batch B --audio clip.wav
// On an accelerator (--provider cuda ...) it also checks the outputs against the CPU running the
// unmodified model (--check-cpu, max |log-prob diff| and decoded-frame agreement), and can write
// the model as the accelerator got it (--dump-rewritten FILE, graph/accelerator_rewrite.h).
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "core/error.h"
#include "core/sample_rate.h"
#include "core/stage_timer.h"
#include "frames/output.h"
#include "frames/powerset.h"
#include "frames/sliding_window.h"
#include "graph/accelerator_rewrite.h"
#include "graph/onnx_graph.h"
#include "runtime/provider.h"
#include "runtime/shutdown.h"
#include "stages/segmentation.h"
#include "stages/segmentation_feed.h"
#include "wav_16k.h"

namespace {

// CPU seconds of the whole process: with other work on the machine, wall time says little
// about the stage's own cost, while CPU time per chunk stays comparable between runs.
double process_cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

// The recording's chunks as `plan` cuts them, with their places in it when `origins` (so that
// they share the first convolution); their scores are kept for --check-cpu.
class RecordingFeed final : public parley::stages::ScoreKeepingFeed {
 public:
  RecordingFeed(const std::vector<float>& audio, const parley::frames::ChunkPlan& plan,
                bool origins)
      : audio_(audio), plan_(plan), origins_(origins) {}
  void read_chunk(std::size_t chunk, std::span<float> samples) override {
    parley::frames::copy_chunk(audio_, plan_, static_cast<std::int64_t>(chunk), samples);
  }
  std::optional<ChunkOrigin> origin(std::size_t chunk) override {
    if (!origins_) return std::nullopt;
    return ChunkOrigin{0, audio_, plan_.chunk_offset(static_cast<std::int64_t>(chunk))};
  }

 private:
  const std::vector<float>& audio_;
  const parley::frames::ChunkPlan& plan_;
  bool origins_;
};

}  // namespace

int main(int argc, char** argv) {
  // Destroyed last: releases ONNX Runtime and its provider libraries in order before exit.
  const parley::runtime::OnnxRuntimeShutdownGuard onnx_runtime_shutdown;
  CLI::App app{"segmentation throughput"};
  std::string model_path;
  std::string audio_path;
  int threads = 1;
  std::size_t batch = 1;
  std::size_t max_chunks = 0;
  int repeats = 3;
  std::string optimization = "extended";
  app.add_option("--model", model_path, "segmentation ONNX model")->required();
  app.add_option("--audio", audio_path, "16 kHz mono WAV")->required();
  app.add_option("--threads", threads, "worker sessions");
  app.add_option("--batch", batch, "chunks per call (dynamic-batch models)");
  int intra_op_threads = 1;
  app.add_option("--intra-op-threads", intra_op_threads, "threads inside each session");
  app.add_option("--max-chunks", max_chunks, "use at most this many chunks (0: all)");
  app.add_option("--repeats", repeats, "timed runs (best is reported)");
  app.add_option("--optimization", optimization, "disabled|basic|extended|all");
  std::string provider = "cpu";
  std::vector<std::string> provider_options;
  std::string dump_rewritten;
  bool check_cpu = false;
  bool per_chunk_convolution = false;
  app.add_option("--provider", provider, "execution provider (cpu, cuda, migraphx, ...)");
  app.add_option("--provider-option", provider_options, "key=value for the provider, repeatable");
  app.add_option("--dump-rewritten", dump_rewritten,
                 "write the model as accelerators get it (If inlined, zero states removed, "
                 "batch dynamic) to this file");
  app.add_flag("--check-cpu", check_cpu,
               "compare the outputs with the unmodified model on the CPU (batch 1)");
  app.add_flag("--per-chunk-convolution", per_chunk_convolution,
               "run the first convolution on every chunk instead of once over the recording");
  CLI11_PARSE(app, argc, argv);
  try {
    if (!dump_rewritten.empty()) {
      const auto rewrite = parley::graph::rewrite_for_accelerator(
          parley::graph::read_model_bytes(model_path), model_path);
      parley::frames::write_text_file(dump_rewritten, rewrite.model);
      fmt::print("wrote {} ({}; {} bytes)\n", dump_rewritten, rewrite.describe(),
                 rewrite.model.size());
    }
    parley::stages::SegmentationConfig config;
    config.provider = parley::runtime::parse_provider(provider);
    config.provider_options = parley::runtime::parse_provider_options(provider_options);
    config.threads = threads;
    config.batch_size = batch;
    config.intra_op_threads = intra_op_threads;
    config.share_first_convolution = !per_chunk_convolution;
    using parley::runtime::GraphOptimization;
    if (optimization == "disabled") {
      config.optimization = GraphOptimization::kDisabled;
    } else if (optimization == "basic") {
      config.optimization = GraphOptimization::kBasic;
    } else if (optimization == "extended") {
      config.optimization = GraphOptimization::kExtended;
    } else if (optimization == "all") {
      config.optimization = GraphOptimization::kAll;
    } else {
      parley::fail("--optimization must be disabled, basic, extended or all");
    }
    const std::vector<float> audio = parley::bench::read_wav_16k_mono(audio_path);
    const auto plan =
        parley::frames::plan_chunks(static_cast<std::int64_t>(audio.size()), parley::kSampleRate);
    auto chunk_count = static_cast<std::size_t>(plan.num_chunks());
    if (max_chunks > 0) chunk_count = std::min(chunk_count, max_chunks);

    const auto load_start = std::chrono::steady_clock::now();
    parley::stages::SegmentationModel model(model_path, config);
    const double load_seconds = parley::seconds_since(load_start);
    const auto segment = [&](parley::stages::SegmentationModel& segmentation, std::size_t chunks,
                             bool origins) {
      RecordingFeed feed(audio, plan, origins);
      segmentation.run(chunks, feed);
      return feed.take_all();
    };
    segment(model, std::min<std::size_t>(chunk_count, 2), true);  // warm-up
    double best = 1e30;
    double best_cpu = 1e30;
    for (int repeat = 0; repeat < repeats; ++repeat) {
      const auto start = std::chrono::steady_clock::now();
      const double cpu_start = process_cpu_seconds();
      segment(model, chunk_count, true);
      best_cpu = std::min(best_cpu, process_cpu_seconds() - cpu_start);
      best = std::min(best, parley::seconds_since(start));
    }
    fmt::print(
        "model={} provider={} dynamic_batch={} threads={} intra_op={} batch={} optimization={} "
        "chunks={} shared_first_convolution={} "
        "load={:.3f}s best={:.3f}s chunks_per_s={:.1f} ms_per_chunk={:.2f} "
        "cpu_ms_per_chunk={:.2f}\n",
        model_path, parley::runtime::provider_name(config.provider),
        model.signature().batch_is_dynamic, threads, intra_op_threads, model.effective_batch_size(),
        optimization, chunk_count, model.shares_first_convolution(), load_seconds, best,
        static_cast<double>(chunk_count) / best, 1000.0 * best / static_cast<double>(chunk_count),
        1000.0 * best_cpu / static_cast<double>(chunk_count));
    if (check_cpu) {
      const parley::NdArray<float> ours = segment(model, chunk_count, true);
      parley::stages::SegmentationConfig cpu_config;
      cpu_config.threads = threads;
      parley::stages::SegmentationModel reference_model(model_path, cpu_config);
      const parley::NdArray<float> reference = segment(reference_model, chunk_count, false);
      double largest = 0.0;
      for (std::size_t i = 0; i < ours.size(); ++i) {
        largest = std::max(largest, static_cast<double>(std::abs(ours(i) - reference(i))));
      }
      const parley::frames::Powerset powerset(3, 2);
      const auto ours_speakers = powerset.to_multilabel(ours);
      const auto reference_speakers = powerset.to_multilabel(reference);
      std::size_t same = 0;
      const std::size_t frames = ours_speakers.dim(0) * ours_speakers.dim(1);
      for (std::size_t frame = 0; frame < frames; ++frame) {
        bool equal = true;
        for (std::size_t s = 0; s < 3; ++s) {
          equal &= ours_speakers(frame * 3 + s) == reference_speakers(frame * 3 + s);
        }
        same += equal ? 1 : 0;
      }
      fmt::print(
          "check against the CPU: max |log-prob diff| {:.6f}, decoded frames equal {:.2f} %\n",
          largest, 100.0 * static_cast<double>(same) / static_cast<double>(frames));
    }
  } catch (const parley::Error& error) {
    fmt::print(stderr, "segmentation_bench: error: {}\n", error.what());
    return 1;
  }
  return 0;
}
