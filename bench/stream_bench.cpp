// stream_bench: figures of live diarization (docs/live.md, docs/benchmarks.md): the latency of
// final labels fed at real-time pace, agreement with the offline pipeline, the compute per
// second of audio (streams one core keeps in real time), and the stream's memory after 3 hours
// against 3 minutes. With --streams N: N streams in one process on one set of models (as `parley
// serve`'s WebSocket streams share the server's), each fed at real-time pace on its own thread:
// the latency of each and of all together, and whether every stream's events equal the same
// stream's run alone.
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <spdlog/cfg/env.h>
#include <CLI/CLI.hpp>

#include "core/error.h"
#include "core/progress.h"
#include "eval/der.h"
#include "pipeline/diarizer.h"
#include "pipeline/option_values.h"
#include "runtime/shutdown.h"
#include "stream/real_time_pacer.h"
#include "stream/stream_diarizer.h"
#include "wav_16k.h"

namespace {

using namespace parley;
using Clock = std::chrono::steady_clock;

struct Options {
  std::vector<std::string> recordings;
  std::string models_dir;
  std::string embedding_model;  // empty: found in the models folder
  int threads = 1;
  double seconds = 0.0;  // 0: whole recordings
  std::vector<double> latencies{2.0, 0.5};
  double memory_hours = 3.0;
  bool skip_realtime = false;
  bool realtime_only = false;
  std::string events_path;  // the as-fast-as-possible runs' events, one JSON line each
  // Embeddings to measure (StreamConfig::embedding), fed in turn, `rounds` times over: on a busy
  // machine alternating keeps the comparison fair.
  std::vector<std::string> embeddings{"auto"};
  int rounds = 1;
  bool embedding_agreement = false;
  // Streams at once in this process, one run per count (none: the single-stream figures).
  std::vector<int> streams;
  // With streams: how many of them (the first) are compared with their run alone.
  int compare_alone = 4;
  double stream_offset = 7.0;      // stream i starts i times this many seconds into the audio
  int first_stream = 0;            // the streams are i = first_stream, first_stream + 1, ...
  bool check_streams = false;      // exit 1 when a stream's events differ from its run alone
  std::string provider;            // empty: the CPU, as the models were always loaded here
  std::string embedding_provider;  // the embedding network's own, if set
  std::vector<std::string> provider_options;  // key=value for the accelerator
  bool force_gpu = false;
  // The process's memory with the real networks: one stream fed this many hours of the
  // recordings, joined and looped, as fast as possible (0: not run).
  double rss_hours = 0.0;
  double rss_every = 180.0;  // audio seconds between two VmRSS samples
};

class Silent : public ProgressSink {
 public:
  void begin(const std::string&, std::size_t) override {}
  void update(std::size_t) override {}
  void end() override {}
};

double process_cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const double at = p * static_cast<double>(values.size() - 1);
  const auto low = static_cast<std::size_t>(std::floor(at));
  const std::size_t high = std::min(low + 1, values.size() - 1);
  return values[low] + (values[high] - values[low]) * (at - static_cast<double>(low));
}

struct Fed {
  std::vector<double> latencies;  // final events' wall latencies
  pipeline::DiarizationResult result;
  double wall = 0.0;
  StageTimes stages;                // the stream's seconds by stage
  std::vector<std::string> events;  // as JSON lines, without the wall latencies
};

// Feeds `audio` in 20 ms blocks, at real-time pace or as fast as possible; real-time pace starts
// at `start` (now if unset).
Fed feed(const stream::StreamModels& models, const stream::StreamConfig& config,
         const std::vector<float>& audio, bool realtime,
         std::optional<Clock::time_point> start_at = std::nullopt) {
  stream::StreamDiarizer diarizer(models, config);
  Fed fed;
  const std::size_t block = 320;
  if (start_at) std::this_thread::sleep_until(*start_at);
  const Clock::time_point start = Clock::now();
  // At real-time pace each block is pushed stamped with when it was due, so a stream that falls
  // behind (its thread waiting for models that other streams hold) carries its backlog in its
  // events' latencies.
  std::optional<stream::RealTimePacer> pacer;
  if (realtime) pacer.emplace(16000.0, start);
  auto take = [&] {
    for (stream::StreamEvent e : diarizer.take_events()) {
      if (e.kind != stream::StreamEvent::Kind::kTurnUpdate)
        fed.latencies.push_back(e.latency_seconds);
      e.latency_seconds = 0.0;  // wall time: differs between any two runs
      fed.events.push_back(e.to_json());
    }
  };
  for (std::size_t at = 0; at < audio.size(); at += block) {
    const std::size_t n = std::min(block, audio.size() - at);
    std::optional<Clock::time_point> arrival;
    if (pacer) arrival = pacer->arrive(n);
    diarizer.push(std::span<const float>(audio).subspan(at, n), arrival);
    take();
  }
  // Events of the stream's end wait for no more audio: they are not live latencies.
  fed.result = diarizer.finish();
  for (stream::StreamEvent e : diarizer.take_events()) {
    e.latency_seconds = 0.0;
    fed.events.push_back(e.to_json());
  }
  fed.stages = diarizer.stage_times();
  fed.wall = std::chrono::duration<double>(Clock::now() - start).count();
  return fed;
}

// The union of the turns as one "speech" speaker: overlapping turns count once.
std::vector<eval::Turn> as_speech(std::vector<frames::Turn> turns) {
  std::sort(turns.begin(), turns.end(),
            [](const auto& a, const auto& b) { return a.start < b.start; });
  std::vector<eval::Turn> speech;
  for (const auto& t : turns) {
    if (!speech.empty() && t.start <= speech.back().end()) {
      speech.back().duration = std::max(speech.back().end(), t.end) - speech.back().start;
    } else {
      speech.push_back({"r", t.start, t.end - t.start, "speech"});
    }
  }
  return speech;
}

double cosine(const NdArray<float>& a, const NdArray<float>& b, std::size_t row) {
  double dot = 0.0, na = 0.0, nb = 0.0;
  for (std::size_t d = 0; d < a.dim(1); ++d) {
    dot += static_cast<double>(a(row, d)) * b(row, d);
    na += static_cast<double>(a(row, d)) * a(row, d);
    nb += static_cast<double>(b(row, d)) * b(row, d);
  }
  return dot / std::sqrt(na * nb);
}

// The rolling trunk's embeddings against whole windows', window by window at the default step,
// for the local speakers active in at least 20 % of a window (those clustering learns from);
// and, for scale, the whole-window embeddings' own change from one window to the next.
void embedding_agreement(const stream::StreamModels& models, const std::string& name,
                         const std::vector<float>& audio) {
  const stream::WindowModel& model = models.model();
  stream::StreamConfig config;
  config.embedding = stream::StreamEmbedding::kRolling;
  const std::size_t step = 8000;
  const std::unique_ptr<stream::WindowModelState> state = model.open_stream(config, step);
  std::vector<double> cosines, jitter;
  stream::WindowAnalysis previous;
  std::vector<bool> previous_long;
  StageTimes times;
  std::vector<float> window(160000, 0.0F);
  for (std::size_t end = step; end < audio.size() + step; end += step) {
    std::copy(window.begin() + step, window.end(), window.begin());
    for (std::size_t i = 0; i < step; ++i) {
      const std::size_t at = end - step + i;
      window[window.size() - step + i] = at < audio.size() ? audio[at] : 0.0F;
    }
    const stream::WindowAnalysis whole = model.analyze_timed(window, times);
    const stream::WindowAnalysis rolling = model.analyze_step(state.get(), window, times);
    std::vector<bool> long_enough(whole.segmentation.dim(1), false);
    for (std::size_t l = 0; l < long_enough.size(); ++l) {
      std::size_t on = 0;
      for (std::size_t f = 0; f < whole.segmentation.dim(0); ++f) {
        on += whole.segmentation(f, l) > 0.5F ? 1 : 0;
      }
      if (on < whole.segmentation.dim(0) / 5) continue;
      long_enough[l] = true;
      cosines.push_back(cosine(whole.embeddings, rolling.embeddings, l));
      if (!previous_long.empty() && previous_long[l]) {
        jitter.push_back(1.0 - cosine(whole.embeddings, previous.embeddings, l));
      }
    }
    previous = whole;
    previous_long = long_enough;
  }
  std::vector<double> distances;
  for (double c : cosines) distances.push_back(1.0 - c);
  fmt::print(
      "embeddings {} (rolling vs window, 0.5 s step, speakers in >= 20 % of a window): {} pairs, "
      "cosine min {:.4f}, 1st pct {:.4f}, 5th pct {:.4f}, median {:.6f}; median 1 - cosine "
      "{:.5f} against {:.5f} between consecutive windows' own embeddings\n",
      name, cosines.size(),
      cosines.empty() ? 0.0 : *std::min_element(cosines.begin(), cosines.end()),
      percentile(cosines, 0.01), percentile(cosines, 0.05), percentile(cosines, 0.5),
      percentile(distances, 0.5), percentile(jitter, 0.5));
}

// `seconds` of `audio` from `offset` seconds on, wrapping around at its end.
std::vector<float> excerpt(const std::vector<float>& audio, double offset, double seconds) {
  std::vector<float> out(static_cast<std::size_t>(seconds * 16000.0));
  const auto first = static_cast<std::size_t>(offset * 16000.0);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = audio[(first + i) % audio.size()];
  return out;
}

std::string distribution(const std::vector<double>& values) {
  return fmt::format("median {:.3f} s, p95 {:.3f} s, max {:.3f} s", percentile(values, 0.5),
                     percentile(values, 0.95),
                     values.empty() ? 0.0 : *std::max_element(values.begin(), values.end()));
}

// N streams at once on one set of models, each on its own thread at real-time pace, their starts
// spread evenly over one step (streams that arrive at random moments, not all at one instant).
// `alone` holds the events of the first streams run alone as fast as possible (more are added
// as needed, up to `compare`), which the concurrent run must repeat. Returns whether every
// stream compared gave the same events.
bool concurrent_streams(const stream::StreamModels& models, const stream::StreamConfig& config,
                        const std::vector<std::vector<float>>& audios, std::size_t compare,
                        std::vector<std::vector<std::string>>& alone) {
  const std::size_t n = audios.size();
  compare = std::min(compare, n);
  while (alone.size() < compare) {
    alone.push_back(feed(models, config, audios[alone.size()], false).events);
  }
  std::vector<Fed> fed(n);
  std::vector<std::exception_ptr> errors(n);
  const Clock::time_point start = Clock::now() + std::chrono::milliseconds(200);
  const double cpu_before = process_cpu_seconds();
  const auto unix_seconds = [] {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  const double unix_start = unix_seconds() + 0.2;
  {
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < n; ++i) {
      const auto delay = std::chrono::duration<double>(
          config.step_seconds * static_cast<double>(i) / static_cast<double>(n));
      threads.emplace_back([&, i, delay] {
        try {
          fed[i] = feed(models, config, audios[i], true,
                        start + std::chrono::duration_cast<Clock::duration>(delay));
        } catch (...) {
          errors[i] = std::current_exception();
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
  }
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  const double cpu = process_cpu_seconds() - cpu_before;
  const double unix_end = unix_seconds();
  for (const std::exception_ptr& error : errors) {
    if (error) std::rethrow_exception(error);
  }
  // A stream keeps up when its final events come within the setting, the wait for the step to
  // fill (up to one step) and the step's model time (under one step, or the stream falls
  // behind and its latency grows without end).
  const double bound = config.latency_seconds + 2.0 * config.step_seconds;
  std::vector<double> pooled;
  std::size_t kept = 0, identical = 0, compared = 0;
  double audio_seconds = 0.0, model_seconds = 0.0;
  std::size_t steps = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::vector<double>& latencies = fed[i].latencies;
    pooled.insert(pooled.end(), latencies.begin(), latencies.end());
    const bool within = !latencies.empty() && percentile(latencies, 0.95) <= bound;
    const bool checked = i < compare;
    const bool same = checked && fed[i].events == alone[i];
    kept += within ? 1 : 0;
    compared += checked ? 1 : 0;
    identical += same ? 1 : 0;
    audio_seconds += static_cast<double>(audios[i].size()) / 16000.0;
    double stream_model = 0.0;
    for (const auto& [stage, seconds] : fed[i].stages.entries()) {
      if (stage != "clustering" && stage != "aggregation") stream_model += seconds;
    }
    model_seconds += stream_model;
    const auto stream_steps = static_cast<std::size_t>(
        std::ceil(static_cast<double>(audios[i].size()) / (config.step_seconds * 16000.0)));
    steps += stream_steps;
    fmt::print(
        "stream {} of {}: {} final events, {}; {} the bound; model {:.1f} ms a step; events {}\n",
        i + 1, n, latencies.size(), distribution(latencies), within ? "within" : "OVER",
        1000.0 * stream_model / static_cast<double>(std::max<std::size_t>(stream_steps, 1)),
        !checked ? "not compared"
        : same   ? "identical to the stream alone"
                 : "DIFFER from the stream alone");
  }
  fmt::print(
      "streams {} in one process (latency {} s, step {} s, bound p95 <= {:.2f} s): {} final "
      "events, {}; {} of {} within the bound; events identical to the stream alone: {} of {} "
      "compared; model {:.1f} ms a step (its own calls, not the wait for the shared models); "
      "{:.1f} s of "
      "audio in {:.1f} s, process CPU {:.3f} s per second of audio; from {:.1f} to {:.1f} (Unix "
      "time, to match device samples)\n",
      n, config.latency_seconds, config.step_seconds, bound, pooled.size(), distribution(pooled),
      kept, n, identical, compared,
      1000.0 * model_seconds / static_cast<double>(std::max<std::size_t>(steps, 1)), audio_seconds,
      wall, cpu / audio_seconds, unix_start, unix_end);
  std::fflush(stdout);
  return identical == compared;
}

// A model that costs nothing: the memory figures are about the stream's own state.
class QuietModel : public stream::WindowModel {
 public:
  stream::WindowAnalysis analyze(std::span<const float> window) const override {
    NdArray<float> segmentation({589, 3});
    NdArray<float> embeddings({3, 8}, std::nanf(""));
    // Two voices taking turns by the window's position in the signal.
    const int who = window[80000] > 0.0F ? 0 : 1;
    for (std::size_t f = 0; f < 589; f += 1) segmentation(f, static_cast<std::size_t>(who)) = 1.0F;
    for (std::size_t d = 0; d < 8; ++d) {
      embeddings(static_cast<std::size_t>(who), d) =
          d == static_cast<std::size_t>(who) ? 1.0F : 0.0F;
    }
    return {std::move(segmentation), std::move(embeddings)};
  }
};

void memory_figures(double hours) {
  const stream::StreamModels models(std::make_unique<QuietModel>());
  stream::StreamDiarizer diarizer(models, stream::StreamConfig{});
  // 7 s of one voice, 5 s of the other, over and over.
  std::vector<float> minute(16000 * 60);
  for (std::size_t i = 0; i < minute.size(); ++i) minute[i] = (i / 16000) % 12 < 7 ? 0.5F : -0.5F;
  stream::StreamState at3;
  const int minutes = static_cast<int>(hours * 60.0);
  for (int m = 1; m <= minutes; ++m) {
    diarizer.push(minute);
    diarizer.take_events();
    if (m == 3) at3 = diarizer.state();
  }
  const stream::StreamState end = diarizer.state();
  auto row = [](const char* when, const stream::StreamState& s) {
    fmt::print(
        "memory {}: steps {}, buffered samples {}, open frames {}, speakers {}, "
        "finished turns {}, working bytes {}, bytes with turns {}\n",
        when, s.steps, s.buffered_samples, s.buffered_frames, s.speakers, s.finished_turns,
        s.working_bytes, s.bytes);
  };
  row("after 3 min", at3);
  row(fmt::format("after {} min", minutes).c_str(), end);
}

// The machine's load (/proc/loadavg's first three fields): a shared machine's timings say it.
std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return fmt::format("{} {} {}", one, five, fifteen);
}

// The latency of final labels with the recordings fed one after the other at real-time pace,
// one distribution per latency setting.
void realtime_latency(const stream::StreamModels& models, stream::StreamConfig config,
                      const std::vector<std::vector<float>>& audios,
                      const std::vector<double>& latencies) {
  for (const double latency : latencies) {
    config.latency_seconds = latency;
    const std::string load_before = load_average();
    const double cpu_before = process_cpu_seconds();
    double audio_seconds = 0.0;
    std::vector<double> all;
    for (const auto& audio : audios) {
      const Fed fed = feed(models, config, audio, true);
      all.insert(all.end(), fed.latencies.begin(), fed.latencies.end());
      audio_seconds += static_cast<double>(audio.size()) / 16000.0;
    }
    fmt::print(
        "latency setting {} s, real-time pace: {} final events, median {:.3f} s, "
        "p95 {:.3f} s, max {:.3f} s; {:.1f} s of audio, process CPU {:.3f} s per second of "
        "audio; load average {} before, {} after\n",
        latency, all.size(), percentile(all, 0.5), percentile(all, 0.95),
        all.empty() ? 0.0 : *std::max_element(all.begin(), all.end()), audio_seconds,
        (process_cpu_seconds() - cpu_before) / std::max(audio_seconds, 1e-9), load_before,
        load_average());
    std::fflush(stdout);
  }
}

// The process's resident memory (VmRSS of /proc/self/status) in KiB; 0 where there is none.
long resident_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return 0;
}

// One stream with the real networks fed `hours` of `joined` (looped) as fast as possible, the
// process's VmRSS printed every `every` seconds of audio, and its growth per hour between the
// first sample and the last: what a server holding a stream for hours would see, models
// included. The loop never holds more than `joined` and one block.
void resident_memory(const stream::StreamModels& models, const std::vector<float>& joined,
                     double hours, double every) {
  if (joined.empty()) fail("no audio to loop");
  if (every <= 0) fail("--rss-every must be positive");
  stream::StreamDiarizer diarizer(models, stream::StreamConfig{});
  const auto total = static_cast<std::size_t>(hours * 3600.0 * 16000.0);
  const auto mark = static_cast<std::size_t>(every * 16000.0);
  const std::size_t block = 8000;
  std::vector<float> chunk(block);
  const Clock::time_point start = Clock::now();
  const double cpu_start = process_cpu_seconds();
  long first_kib = 0;
  double first_seconds = 0.0;
  fmt::print("rss start: {} KiB before the stream's first sample ({:.1f} s of audio looped)\n",
             resident_kib(), static_cast<double>(joined.size()) / 16000.0);
  std::fflush(stdout);
  std::size_t events = 0;
  for (std::size_t at = 0; at < total; at += block) {
    const std::size_t n = std::min(block, total - at);
    for (std::size_t i = 0; i < n; ++i) chunk[i] = joined[(at + i) % joined.size()];
    diarizer.push(std::span<const float>(chunk).first(n));
    events += diarizer.take_events().size();
    const std::size_t done = at + n;
    if (done / mark == at / mark && done != total) continue;
    const double seconds = static_cast<double>(done) / 16000.0;
    const long kib = resident_kib();
    if (first_kib == 0) {
      first_kib = kib;
      first_seconds = seconds;
    }
    const stream::StreamState s = diarizer.state();
    fmt::print(
        "rss audio {:.0f} s ({:.2f} h): VmRSS {} KiB; wall {:.0f} s, CPU {:.3f} s per second of "
        "audio; stream: steps {}, speakers {}, finished turns {}, working bytes {}, bytes with "
        "turns {}; events {}\n",
        seconds, seconds / 3600.0, kib, std::chrono::duration<double>(Clock::now() - start).count(),
        (process_cpu_seconds() - cpu_start) / seconds, s.steps, s.speakers, s.finished_turns,
        s.working_bytes, s.bytes, events);
    if (seconds > first_seconds) {
      fmt::print("rss growth since {:.0f} s of audio: {:+.1f} KiB per hour of audio\n",
                 first_seconds,
                 static_cast<double>(kib - first_kib) / ((seconds - first_seconds) / 3600.0));
    }
    std::fflush(stdout);
  }
  diarizer.finish();
  fmt::print("rss after finish: VmRSS {} KiB\n", resident_kib());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Live diarization figures (docs/live.md)"};
  Options options;
  app.add_option("recordings", options.recordings, "16 kHz WAV recordings")->required();
  app.add_option("--models", options.models_dir, "models folder (else the usual search)");
  app.add_option("--embedding-model", options.embedding_model,
                 "speaker-embedding .onnx (else the one of the models folder)");
  app.add_option("--threads", options.threads, "CPU threads of the model calls")
      ->capture_default_str();
  app.add_option("--seconds", options.seconds, "use at most this much of each recording (0: all)");
  app.add_option("--latencies", options.latencies, "latency settings to measure")
      ->capture_default_str();
  app.add_option("--memory-hours", options.memory_hours, "length of the memory run (hours)")
      ->capture_default_str();
  app.add_flag("--skip-realtime", options.skip_realtime, "no real-time-paced runs");
  app.add_flag("--realtime-only", options.realtime_only,
               "only the latency at real-time pace (no as-fast-as-possible, agreement or memory "
               "runs)");
  app.add_option("--events", options.events_path,
                 "write the as-fast-as-possible runs' events here (to compare builds; with "
                 "several --stream-embedding, one file each, named PATH.EMBEDDING)");
  app.add_option("--stream-embedding", options.embeddings,
                 "stream embeddings to measure, in turn: auto, window, rolling")
      ->check(CLI::IsMember({"auto", "window", "rolling"}))
      ->capture_default_str();
  app.add_flag("--embedding-agreement", options.embedding_agreement,
               "compare the rolling trunk's embeddings with whole windows', window by window");
  app.add_option("--rounds", options.rounds,
                 "feed every recording this many times per embedding, alternating (timings)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  app.add_option("--streams", options.streams,
                 "N streams at once in this process on one set of models, each at real-time "
                 "pace on its own thread; several counts run one after the other, each with "
                 "every --stream-embedding (only these figures; the first latency setting)")
      ->check(CLI::Range(1, 512));
  app.add_option("--compare-alone", options.compare_alone,
                 "with --streams: compare this many streams' events with their run alone")
      ->check(CLI::Range(0, 512))
      ->capture_default_str();
  app.add_option("--stream-offset", options.stream_offset,
                 "with --streams: stream i starts i times this many seconds into the audio")
      ->capture_default_str();
  app.add_option("--first-stream", options.first_stream,
                 "with --streams: number the streams from this one (N processes of one stream "
                 "each, each its own audio)")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  app.add_flag("--check-streams", options.check_streams,
               "with --streams: exit 1 when a stream's events differ from its run alone");
  app.add_option("--provider", options.provider,
                 "execution provider as `parley stream --provider` (default: the CPU)");
  app.add_option("--rss-hours", options.rss_hours,
                 "only this: one stream fed this many hours of the recordings (joined, looped) "
                 "as fast as possible, with the process's VmRSS every --rss-every seconds")
      ->check(CLI::Range(0.0, 1000.0));
  app.add_option("--rss-every", options.rss_every,
                 "with --rss-hours: seconds of audio between two VmRSS samples")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_flag("--force-gpu", options.force_gpu, "every model on the GPU provider");
  app.add_option("--embedding-provider", options.embedding_provider,
                 "provider of the embedding network only (as `parley stream`)");
  app.add_option("--provider-option", options.provider_options,
                 "key=value for the accelerator's provider, repeatable");
  CLI11_PARSE(app, argc, argv);
  // SPDLOG_LEVEL=debug: each session's first runs by input shape (runtime/onnx_session.cpp).
  spdlog::cfg::load_env_levels();
  // Destroyed last: releases ONNX Runtime and its provider libraries in order before exit.
  const runtime::OnnxRuntimeShutdownGuard onnx_runtime_shutdown;
  try {
    pipeline::DiarizationConfig config;
    if (!options.provider.empty() || options.force_gpu || !options.embedding_provider.empty()) {
      // The CLI's routing of the models (pipeline/option_values.h).
      nlohmann::json values = {{"threads", options.threads}, {"force_gpu", options.force_gpu}};
      if (!options.provider.empty()) values["provider"] = options.provider;
      if (!options.embedding_provider.empty()) {
        values["embedding_provider"] = options.embedding_provider;
      }
      if (!options.provider_options.empty()) values["provider_options"] = options.provider_options;
      pipeline::apply_options(values, config);
    }
    config.threads = options.threads;
    pipeline::DiarizationModels explicit_paths;
    explicit_paths.embedding = options.embedding_model;
    const pipeline::DiarizationModels paths = pipeline::locate_models(
        explicit_paths, options.models_dir.empty()
                            ? std::nullopt
                            : std::optional<std::filesystem::path>(options.models_dir));
    const stream::StreamModels models(paths, config);
    std::vector<std::vector<float>> audios;
    for (const auto& path : options.recordings) {
      std::vector<float> audio = bench::read_wav_16k_mono(path);
      if (options.seconds > 0 && static_cast<double>(audio.size()) > options.seconds * 16000) {
        audio.resize(static_cast<std::size_t>(options.seconds * 16000));
      }
      audios.push_back(std::move(audio));
    }
    if (options.rss_hours > 0) {
      std::vector<float> joined;
      for (const auto& audio : audios) joined.insert(joined.end(), audio.begin(), audio.end());
      audios.clear();
      resident_memory(models, joined, options.rss_hours, options.rss_every);
      return 0;
    }
    if (!options.streams.empty()) {
      std::vector<float> joined;
      for (const auto& audio : audios) joined.insert(joined.end(), audio.begin(), audio.end());
      const double seconds =
          options.seconds > 0 ? options.seconds : static_cast<double>(joined.size()) / 16000.0;
      const int most = *std::max_element(options.streams.begin(), options.streams.end());
      std::vector<std::vector<float>> streams;
      for (int i = 0; i < most; ++i) {
        streams.push_back(
            excerpt(joined, options.stream_offset * (options.first_stream + i), seconds));
      }
      bool identical = true;
      for (const std::string& name : options.embeddings) {
        stream::StreamConfig stream_config;
        stream_config.embedding = stream::parse_stream_embedding(name);
        stream_config.latency_seconds = options.latencies.front();
        fmt::print("embedding {}\n",
                   stream::stream_embedding_name(
                       stream::StreamDiarizer(models, stream_config).embedding()));
        std::vector<std::vector<std::string>> alone;
        for (const int n : options.streams) {
          const std::vector<std::vector<float>> these(streams.begin(), streams.begin() + n);
          identical = concurrent_streams(models, stream_config, these,
                                         static_cast<std::size_t>(options.compare_alone), alone) &&
                      identical;
        }
      }
      return options.check_streams && !identical ? 1 : 0;
    }
    if (options.realtime_only) {
      stream::StreamConfig stream_config;
      stream_config.embedding = stream::parse_stream_embedding(options.embeddings.front());
      realtime_latency(models, stream_config, audios, options.latencies);
      return 0;
    }
    pipeline::Diarizer offline(paths, config);

    // Compute per second of audio, as fast as possible (default settings but the embedding).
    struct Measured {
      std::string name;
      stream::StreamConfig config;
      std::string used;  // what auto resolved to
      double audio_seconds = 0.0, wall = 0.0, cpu = 0.0;
      StageTimes stages;
      std::vector<pipeline::DiarizationResult> results;  // per recording, the first round's
      std::vector<std::vector<std::string>> events;      // likewise
    };
    std::vector<Measured> measured;
    for (const std::string& name : options.embeddings) {
      Measured m;
      m.name = name;
      m.config.embedding = stream::parse_stream_embedding(name);
      m.used = stream::stream_embedding_name(stream::StreamDiarizer(models, m.config).embedding());
      measured.push_back(std::move(m));
    }
    const eval::ScoringOptions scoring = eval::scoring_options(eval::Convention::strict);
    // Speech-detection error of `hypothesis` against `reference`, and the share of the speech both
    // detect whose speaker maps (optimal mapping) to the reference's.
    const auto agreement = [&](const std::vector<frames::Turn>& reference,
                               const std::vector<frames::Turn>& hypothesis) {
      const eval::FileScore speakers =
          eval::score_file("r", frames::to_eval_turns(reference, "r"),
                           frames::to_eval_turns(hypothesis, "r"), nullptr, scoring);
      const eval::FileScore speech =
          eval::score_file("r", as_speech(reference), as_speech(hypothesis), nullptr, scoring);
      const eval::ErrorTimes& s = speakers.times;
      return fmt::format(
          "speech-detection error {:.1f}% (missed {:.1f} s, false alarm {:.1f} s of {:.1f} s "
          "speech), speech both detect with the mapped speaker {:.1f}%, DER {:.1f}%",
          100.0 * speech.times.der(), speech.times.missed, speech.times.false_alarm,
          speech.times.total, 100.0 * (1.0 - s.confusion / std::max(1e-9, s.total - s.missed)),
          100.0 * s.der());
    };
    for (int round = 0; round < options.rounds; ++round) {
      for (std::size_t r = 0; r < audios.size(); ++r) {
        for (Measured& m : measured) {
          const double cpu_before = process_cpu_seconds();
          Fed fast = feed(models, m.config, audios[r], false);
          m.cpu += process_cpu_seconds() - cpu_before;
          m.audio_seconds += static_cast<double>(audios[r].size()) / 16000.0;
          m.wall += fast.wall;
          for (const auto& [stage, seconds] : fast.stages.entries()) m.stages.add(stage, seconds);
          if (round == 0) {
            m.results.push_back(std::move(fast.result));
            m.events.push_back(std::move(fast.events));
          }
        }
      }
    }
    for (const Measured& m : measured) {
      if (options.events_path.empty()) break;
      const std::string path =
          measured.size() == 1 ? options.events_path : options.events_path + "." + m.name;
      std::ofstream events_file(path);
      if (!events_file) fail("cannot write {}", path);
      for (const auto& lines : m.events) {
        for (const std::string& line : lines) events_file << line << '\n';
      }
    }
    // Agreement with the offline pipeline, and between the embeddings measured.
    for (std::size_t r = 0; r < audios.size(); ++r) {
      Silent silent;
      const pipeline::DiarizationResult batch = offline.diarize(audios[r], "r", silent);
      for (const Measured& m : measured) {
        fmt::print("agreement {} ({}): {:.1f} s, live {} speakers / offline {}, vs offline: {}\n",
                   options.recordings[r], m.used, static_cast<double>(audios[r].size()) / 16000.0,
                   m.results[r].speaker_count, batch.speaker_count,
                   agreement(batch.turns, m.results[r].turns));
      }
      // The other latency settings, as fast as possible: a shorter latency averages fewer windows
      // into each final frame.
      for (const double latency : options.latencies) {
        stream::StreamConfig config_l = measured.front().config;
        if (latency == config_l.latency_seconds) continue;
        config_l.latency_seconds = latency;
        const Fed fed = feed(models, config_l, audios[r], false);
        fmt::print(
            "agreement {} ({}, latency {} s): live {} speakers / offline {}, vs offline: {}\n",
            options.recordings[r], measured.front().used, latency, fed.result.speaker_count,
            batch.speaker_count, agreement(batch.turns, fed.result.turns));
      }
      for (std::size_t i = 1; i < measured.size(); ++i) {
        const Measured& a = measured[0];
        const Measured& b = measured[i];
        std::size_t same = 0;
        for (std::size_t e = 0; e < std::min(a.events[r].size(), b.events[r].size()); ++e) {
          same += a.events[r][e] == b.events[r][e] ? 1 : 0;
        }
        fmt::print(
            "agreement {} ({} vs {}): events {} / {}, {} identical in order; {} as reference: "
            "{}\n",
            options.recordings[r], b.used, a.used, b.events[r].size(), a.events[r].size(), same,
            a.used, agreement(a.results[r].turns, b.results[r].turns));
      }
    }
    for (std::size_t r = 0; r < audios.size() && options.embedding_agreement; ++r) {
      embedding_agreement(models, options.recordings[r], audios[r]);
    }
    for (const Measured& m : measured) {
      const double rtf = m.wall / m.audio_seconds;
      fmt::print(
          "compute ({}): {:.1f} s of audio in {:.2f} s with {} thread(s): real-time factor "
          "{:.3f}, {:.1f} real-time streams per {} thread(s) at most\n",
          m.used, m.audio_seconds, m.wall, options.threads, rtf, 1.0 / rtf, options.threads);
      // Where the time goes, per second of audio: what a change to one stage can save.
      std::string split;
      for (const auto& [stage, seconds] : m.stages.entries()) {
        split +=
            fmt::format("{}{} {:.3f}", split.empty() ? "" : ", ", stage, seconds / m.audio_seconds);
      }
      fmt::print(
          "compute per second of audio ({}): CPU {:.3f} s, wall {:.3f} s; by stage (s/s): {}\n",
          m.used, m.cpu / m.audio_seconds, m.wall / m.audio_seconds, split);
    }

    if (!options.skip_realtime) {
      realtime_latency(models, measured.front().config, audios, options.latencies);
    }
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    fmt::print("peak RSS {:.0f} MiB\n", static_cast<double>(usage.ru_maxrss) / 1024.0);
    if (options.memory_hours > 0) memory_figures(options.memory_hours);
  } catch (const std::exception& error) {
    fmt::print(stderr, "stream_bench: {}\n", error.what());
    return 1;
  }
  return 0;
}
