// `parley bench AUDIO...`: how fast the pipeline runs here. Models load once; warm-up runs are
// not timed; every timed run is silent (no progress, no per-call logging) and records wall time
// and time per stage (decode, segmentation, embedding, clustering, reconstruction, output).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "audio/audio_source.h"
#include "audio/mono_resampled_stream.h"
#include "cli/commands.h"
#include "cli/diarization_options.h"
#include "cli/diarize_corpus.h"
#include "core/error.h"
#include "core/progress.h"
#include "core/sample_stats.h"
#include "core/stage_timer.h"

#include "core/text.h"
#include "core/version.h"
#include "eval/eval_results.h"
#include "models/speed_twin.h"
#include "pipeline/diarizer.h"
#include "plot/charts.h"
#include "plot/gnuplot.h"
#include "runtime/device_memory.h"

namespace parley::cli {
namespace {

// Version 2 replaced "rtf" (which held audio per wall second) with "real_time_factor" (wall per
// audio second) and "speed" (audio per wall second).
constexpr const char* kBenchSchema = "parley-bench/2";

struct BenchArguments {
  std::vector<std::string> audio;
  std::string after_double_dash;  // never filled: accept_files_after_double_dash
  DiarizationFlags flags;
  EngineFlags engine;
  int warmup = 1;
  int repeat = 3;
  bool json = false;
  std::string plot;
  std::string label;
};

struct TimedRun {
  double audio_seconds = 0.0;
  double wall_seconds = 0.0;
  StageTimes stages;  // decode, the diarizer's stages, output
  std::size_t speakers = 0;
  std::size_t turns = 0;
};

struct FileBench {
  std::string audio;
  std::string uri;
  double audio_seconds = 0.0;
  std::vector<TimedRun> runs;
};

// Used device memory (total - free), sampled between runs; the device is shared with whatever
// else runs on it, so this is an upper bound for parley.
struct DeviceMemorySamples {
  std::optional<runtime::DeviceMemory> before_models;
  std::uintmax_t peak_used_bytes = 0;
  std::string source;
};

double peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) * 1024.0;  // ru_maxrss is KiB on Linux
}

TimedRun run_once(pipeline::Diarizer& diarizer, const std::string& audio, const std::string& uri,
                  Progress& progress) {
  TimedRun run;
  const auto start = std::chrono::steady_clock::now();
  std::vector<float> samples;
  {
    ScopedStageTimer timer(run.stages, "decode");
    samples = audio::load_mono_16k(audio);
  }
  run.audio_seconds = static_cast<double>(samples.size()) / 16000.0;
  const pipeline::DiarizationResult result = diarizer.diarize(samples, uri, progress);
  for (const auto& [stage, seconds] : result.stage_times.entries()) run.stages.add(stage, seconds);
  {
    ScopedStageTimer timer(run.stages, "output");
    const std::string rttm = eval::format_rttm(frames::to_eval_turns(result.turns, result.uri));
    // Keeps the formatting from being optimized away without printing anything.
    if (rttm.size() == static_cast<std::size_t>(-1)) std::fputs(rttm.c_str(), stderr);
  }
  run.wall_seconds = seconds_since(start);
  run.speakers = result.speaker_count;
  run.turns = result.turns.size();
  return run;
}

std::vector<std::string> stage_order(const std::vector<FileBench>& files) {
  std::vector<std::string> order;
  for (const FileBench& file : files) {
    for (const TimedRun& run : file.runs) {
      for (const auto& [stage, seconds] : run.stages.entries()) {
        if (std::find(order.begin(), order.end(), stage) == order.end()) order.push_back(stage);
      }
    }
  }
  return order;
}

double stage_of(const StageTimes& times, const std::string& stage) {
  for (const auto& [name, seconds] : times.entries()) {
    if (name == stage) return seconds;
  }
  return 0.0;
}

SampleStats stage_stats(const FileBench& file, const std::string& stage) {
  std::vector<double> values;
  for (const TimedRun& run : file.runs) values.push_back(stage_of(run.stages, stage));
  return summarize(values);
}

SampleStats wall_stats(const FileBench& file) {
  std::vector<double> values;
  for (const TimedRun& run : file.runs) values.push_back(run.wall_seconds);
  return summarize(values);
}

// Wall seconds per audio second of each run (lower is faster).
SampleStats real_time_factor_stats(const FileBench& file) {
  std::vector<double> values;
  for (const TimedRun& run : file.runs) {
    values.push_back(eval::real_time_factor(file.audio_seconds, run.wall_seconds));
  }
  return summarize(values);
}

// Audio seconds per wall second of each run: x real time (higher is faster).
SampleStats speed_stats(const FileBench& file) {
  std::vector<double> values;
  for (const TimedRun& run : file.runs) {
    values.push_back(eval::speed(file.audio_seconds, run.wall_seconds));
  }
  return summarize(values);
}

nlohmann::ordered_json stats_json(const SampleStats& stats) {
  return {{"min", stats.min}, {"median", stats.median}, {"mean", stats.mean}};
}

std::string format_table(const std::vector<FileBench>& files, const BenchArguments& arguments,
                         double model_load_seconds, double rss_bytes,
                         const std::optional<DeviceMemorySamples>& device) {
  const std::vector<std::string> stages = stage_order(files);
  std::string text = fmt::format(
      "{} per file after {}; times in seconds, median of the timed runs (min / mean in --json)\n",
      counted(static_cast<std::size_t>(arguments.repeat), "timed run"),
      counted(static_cast<std::size_t>(arguments.warmup), "warm-up run"));
  std::size_t width = 4;
  for (const FileBench& file : files) width = std::max(width, file.uri.size());
  text += fmt::format("{:<{}}  {:>9}  {:>8}  {:>8}  {:>8}  {:>9}", "file", width, "audio (s)",
                      "wall min", "wall med", "wall avg", "speed med");
  for (const std::string& stage : stages) {
    text += fmt::format("  {:>{}}", stage, std::max<std::size_t>(stage.size(), 7));
  }
  text += "\n";
  for (const FileBench& file : files) {
    const SampleStats wall = wall_stats(file);
    text +=
        fmt::format("{:<{}}  {:>9.1f}  {:>8.2f}  {:>8.2f}  {:>8.2f}  {:>8.1f}x", file.uri, width,
                    file.audio_seconds, wall.min, wall.median, wall.mean, speed_stats(file).median);
    for (const std::string& stage : stages) {
      text += fmt::format("  {:>{}.2f}", stage_stats(file, stage).median,
                          std::max<std::size_t>(stage.size(), 7));
    }
    text += "\n";
  }
  text += fmt::format(
      "model loading {:.2f} s; peak RSS {:.0f} MiB; device memory: {}\n", model_load_seconds,
      rss_bytes / (1024.0 * 1024.0),
      !device ? std::string("n/a (CPU)")
      : device->peak_used_bytes == 0
          ? std::string("not measurable on this machine")
          : fmt::format("{} used at peak of {} ({})",
                        runtime::format_bytes(device->peak_used_bytes),
                        runtime::format_bytes(device->before_models->total_bytes), device->source));
  return text;
}

nlohmann::ordered_json bench_json(const std::vector<FileBench>& files,
                                  const BenchArguments& arguments,
                                  const pipeline::DiarizationConfig& config,
                                  const pipeline::DiarizationModels& models,
                                  const ModelProviders& providers, double model_load_seconds,
                                  double rss_bytes,
                                  const std::optional<DeviceMemorySamples>& device) {
  nlohmann::ordered_json json;
  json["schema"] = kBenchSchema;
  json["parley_version"] = std::string(kVersion);
  json["label"] = arguments.label;
  json["settings"] = {
      {"pipeline", config.to_string()},
      {"step", config.step_seconds},
      {"threads", config.threads},
      {"clustering", arguments.flags.clustering},
      {"embedding_mode", std::string(stages::embedding_mode_name(config.embedding_mode))},
      {"segmentation_provider", runtime::provider_name(providers.segmentation)},
      {"embedding_provider", runtime::provider_name(providers.embedding)},
      {"segmentation_model", models.segmentation.string()},
      {"embedding_model", models.embedding.string()},
      {"speed_twin", models::is_speed_twin(models.embedding)}};
  json["warmup"] = arguments.warmup;
  json["repeat"] = arguments.repeat;
  json["model_load_seconds"] = model_load_seconds;
  const std::vector<std::string> stages = stage_order(files);
  nlohmann::ordered_json file_list = nlohmann::ordered_json::array();
  for (const FileBench& file : files) {
    nlohmann::ordered_json entry;
    entry["audio"] = file.audio;
    entry["uri"] = file.uri;
    entry["audio_seconds"] = file.audio_seconds;
    entry["wall_seconds"] = stats_json(wall_stats(file));
    entry["real_time_factor"] = stats_json(real_time_factor_stats(file));
    entry["speed"] = stats_json(speed_stats(file));
    nlohmann::ordered_json stage_json = nlohmann::ordered_json::object();
    for (const std::string& stage : stages)
      stage_json[stage] = stats_json(stage_stats(file, stage));
    entry["stage_seconds"] = stage_json;
    nlohmann::ordered_json runs = nlohmann::ordered_json::array();
    for (const TimedRun& run : file.runs) {
      nlohmann::ordered_json run_json;
      run_json["wall_seconds"] = run.wall_seconds;
      nlohmann::ordered_json per_stage = nlohmann::ordered_json::object();
      for (const auto& [stage, seconds] : run.stages.entries()) per_stage[stage] = seconds;
      run_json["stage_seconds"] = per_stage;
      run_json["speakers"] = run.speakers;
      run_json["turns"] = run.turns;
      runs.push_back(run_json);
    }
    entry["runs"] = runs;
    file_list.push_back(entry);
  }
  json["files"] = file_list;
  json["peak_rss_bytes"] = static_cast<std::uint64_t>(rss_bytes);
  if (device && device->before_models) {
    json["device_memory"] = {{"source", device->source},
                             {"total_bytes", device->before_models->total_bytes},
                             {"used_bytes_before_models", device->before_models->total_bytes -
                                                              device->before_models->free_bytes},
                             {"peak_used_bytes", device->peak_used_bytes}};
  } else {
    json["device_memory"] = nullptr;
  }
  return json;
}

void run_bench(const BenchArguments& arguments) {
  if (arguments.repeat < 1) fail("--repeat {}: at least one timed run is needed", arguments.repeat);
  if (arguments.warmup < 0) fail("--warmup {}: must be 0 or more", arguments.warmup);
  const OutputOptions output_options{.overwrite_read_only = arguments.flags.force};
  if (!arguments.plot.empty()) {
    static_cast<void>(plot::image_format_for(arguments.plot));
    static_cast<void>(plot::require_gnuplot());
    check_output_file("--plot", arguments.plot, output_options);
  }
  // Every input is checked before any model loads, so a typo fails in milliseconds.
  double longest_input = 0.0;  // what the provider placement weighs
  for (const auto& audio_argument : arguments.audio) {
    const auto duration = audio::open_audio_source(audio_argument)->info().duration_seconds();
    longest_input = std::max(longest_input, duration.value_or(0.0));
  }
  const pipeline::DiarizationConfig config =
      diarization_config(arguments.engine, arguments.flags, longest_input);
  const pipeline::DiarizationModels models = resolve_models(arguments.engine, arguments.flags);
  models::warn_if_speed_twin(models.embedding);
  const ModelProviders providers = model_providers(models, config);
  const std::optional<runtime::WatchedDevice> watched = providers.watched_device();

  std::optional<DeviceMemorySamples> device;
  const auto sample_device = [&] {
    if (!device) return;
    if (const auto memory = runtime::query_device_memory(watched->provider, watched->device_id)) {
      device->peak_used_bytes =
          std::max(device->peak_used_bytes, memory->total_bytes - memory->free_bytes);
      device->source = memory->source;
    }
  };
  if (watched) {
    device.emplace();
    device->before_models = runtime::query_device_memory(watched->provider, watched->device_id);
    if (!device->before_models) device->before_models = runtime::DeviceMemory{};
  }

  const auto load_start = std::chrono::steady_clock::now();
  pipeline::Diarizer diarizer(models, config);
  const double model_load_seconds = seconds_since(load_start);
  sample_device();

  Progress warmup_progress(arguments.flags.quiet ? Progress::Mode::kNever : Progress::Mode::kAuto);
  Progress silent(Progress::Mode::kNever);
  std::vector<FileBench> files;
  for (const std::string& audio : arguments.audio) {
    FileBench file;
    file.audio = audio;
    file.uri = recording_uri(audio);
    for (int i = 0; i < arguments.warmup; ++i) {
      if (!arguments.flags.quiet) {
        fmt::print(stderr, "{}: warm-up run {} of {}\n", file.uri, i + 1, arguments.warmup);
      }
      static_cast<void>(run_once(diarizer, audio, file.uri, warmup_progress));
      sample_device();
    }
    if (!arguments.flags.quiet) {
      fmt::print(stderr, "{}: {}, silent\n", file.uri,
                 counted(static_cast<std::size_t>(arguments.repeat), "timed run"));
    }
    // Timed runs: nothing below a warning is logged, nothing is drawn.
    const spdlog::level::level_enum log_level = spdlog::get_level();
    spdlog::set_level(spdlog::level::warn);
    for (int i = 0; i < arguments.repeat; ++i) {
      file.runs.push_back(run_once(diarizer, audio, file.uri, silent));
      sample_device();
    }
    spdlog::set_level(log_level);
    file.audio_seconds = file.runs.front().audio_seconds;
    files.push_back(std::move(file));
  }
  const double rss = peak_rss_bytes();

  if (arguments.json) {
    fmt::print("{}\n", bench_json(files, arguments, config, models, providers, model_load_seconds,
                                  rss, device)
                           .dump(2));
  } else {
    fmt::print("{}", format_table(files, arguments, model_load_seconds, rss, device));
  }
  if (!arguments.plot.empty()) {
    std::vector<plot::StageBar> bars;
    for (const FileBench& file : files) {
      plot::StageBar bar;
      bar.label = arguments.label.empty() ? file.uri : arguments.label + ": " + file.uri;
      for (const std::string& stage : stage_order(files)) {
        bar.seconds.add(stage, stage_stats(file, stage).median);
      }
      bar.audio_seconds = file.audio_seconds;
      bar.speed = speed_stats(file).median;
      bars.push_back(std::move(bar));
    }
    plot::plot_stage_times(
        bars,
        fmt::format("{} (step {} s, {} embedding, {}, {} threads, median of {})",
                    arguments.label.empty() ? "parley bench" : arguments.label, config.step_seconds,
                    stages::embedding_mode_name(config.embedding_mode), providers.describe(),
                    config.threads, arguments.repeat),
        arguments.plot, output_options);
    if (!arguments.flags.quiet) fmt::print(stderr, "chart written to {}\n", arguments.plot);
  }
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto arguments = std::make_shared<BenchArguments>();
  auto* command = app.add_subcommand("bench",
                                     "Time the pipeline on recordings: wall time, speed and "
                                     "real-time factor, time per stage, peak "
                                     "memory (models load once; warm-up runs are not timed)");
  command->add_option("audio", arguments->audio, "recordings (wav, flac, ogg, mp3, m4a, ...)")
      ->required();
  accept_files_after_double_dash(*command, arguments->after_double_dash);
  add_clustering_flags(*command, arguments->flags);
  add_engine_flags(*command, arguments->engine);
  command->add_option("--warmup", arguments->warmup, "untimed runs per recording first")
      ->capture_default_str();
  command->add_option("--repeat", arguments->repeat, "timed runs per recording")
      ->capture_default_str();
  command->add_flag(
      "--json", arguments->json,
      fmt::format("print a JSON record (schema {}, docs/eval.md) instead of the table",
                  kBenchSchema));
  command->add_option("--plot", arguments->plot,
                      "draw time per stage and speed per recording into this .png or .svg "
                      "(needs gnuplot)");
  command->add_option("--label", arguments->label, "name of this mode in the chart and JSON");
  add_force_flag(*command, arguments->flags.force);
  command->callback([arguments] { run_bench(*arguments); });
}

}  // namespace parley::cli
