#include "corpus/corpus_engine.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "audio/mono_resampled_stream.h"
#include "core/bounded_queue.h"
#include "core/error.h"
#include "core/heap.h"
#include "core/log_subject.h"
#include "core/progress.h"
#include "core/sample_rate.h"
#include "core/stage_timer.h"
#include "core/text.h"
#include "core/trace.h"

namespace parley::corpus {
namespace {

using Clock = std::chrono::steady_clock;

// How log lines name a recording: its file, or its id when its samples came in memory.
std::string shown_name(const CorpusRecording& recording) {
  return recording.audio.empty() ? recording.uri : recording.audio.string();
}

// Where an engine's networks run, as a trace labels its process: the CPU, or the GPU its
// configuration names (a device number when it has one).
std::string device_label(const pipeline::Diarizer& diarizer) {
  if (diarizer.segmentation_chunks_in_flight() == 0) return "cpu";
  const pipeline::DiarizationConfig& config = diarizer.config();
  const runtime::ProviderOptions* options[] = {
      config.placement ? &config.placement->options : nullptr,
      &config.segmentation_provider_options};
  for (const runtime::ProviderOptions* set : options) {
    if (set == nullptr) continue;
    if (const auto id = set->find("device_id"); id != set->end()) return "gpu " + id->second;
  }
  return "gpu";
}

}  // namespace

void CorpusConfig::validate() const {
  if (decode_threads < 1 || decode_threads > kMaxStageThreads) {
    fail("decode_threads must be in [1, {}] (got {})", kMaxStageThreads, decode_threads);
  }
  if (clustering_threads < 1 || clustering_threads > kMaxStageThreads) {
    fail("clustering_threads must be in [1, {}] (got {})", kMaxStageThreads, clustering_threads);
  }
  // Each recording being decoded holds up to spill_samples floats in memory (half an hour:
  // 115 MB), more when spilling is off.
  const std::uintmax_t memory = memory_budget_bytes();
  const std::uintmax_t per_decode =
      static_cast<std::uintmax_t>(spill_samples > 0 ? spill_samples : kSampleRate * 3600) *
      sizeof(float);
  if (memory > 0 && static_cast<std::uintmax_t>(decode_threads) * per_decode > memory) {
    fail(
        "decode_threads {}: each recording being decoded holds up to {} of samples in memory, "
        "{} in all, more than this machine's budget of {} for it (half the memory parley may use); "
        "at most {} fit",
        decode_threads, runtime::format_bytes(per_decode),
        runtime::format_bytes(static_cast<std::uintmax_t>(decode_threads) * per_decode),
        runtime::format_bytes(memory), memory / per_decode);
  }
  if (decoded_per_engine < 1) fail("decoded_per_engine must be at least 1");
  if (group_chunks < 1) fail("group_chunks must be at least 1");
}

std::string CorpusConfig::to_string() const {
  return fmt::format(
      "CorpusConfig(decode_threads={}, clustering_threads={}, decoded_per_engine={}, "
      "group_chunks={}, fill_chunks={}, trace_file=\"{}\")",
      decode_threads, clustering_threads, decoded_per_engine, group_chunks,
      fill_chunks ? std::to_string(*fill_chunks) : std::string("automatic"),
      utf8_or_escaped(trace_file.string()));
}

int automatic_engines_per_device(const std::optional<runtime::DeviceMemory>& memory) {
  if (!memory) return 1;
  const auto fit = static_cast<int>(std::min<std::uintmax_t>(
      memory->free_bytes / kDeviceBytesPerEngine, kMaxAutomaticEnginesPerDevice));
  return std::max(1, fit);
}

void use_several_engines_layout(pipeline::DiarizationConfig& config) {
  config.segmentation_accelerator_sessions = kSeveralEnginesSegmentationSessions;
  if (!config.placement) config.placement.emplace();
  config.placement->accelerator_segmentation_batch_size = kSeveralEnginesSegmentationBatch;
}

int max_engines_per_device(bool on_accelerator) {
  if (on_accelerator) return kMaxEnginesPerDevice;
  return std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, kMaxEnginesPerDevice);
}

void check_engines_per_device(int engines_per_device, bool on_accelerator, std::size_t devices) {
  if (engines_per_device < 1) {
    fail("engines_per_device must be at least 1 (got {})", engines_per_device);
  }
  const int most = max_engines_per_device(on_accelerator);
  if (engines_per_device > most) {
    if (on_accelerator) {
      fail(
          "engines_per_device must be at most {} on a GPU (got {}): each engine holds a model set "
          "and up to {} of device memory at its peak, and 3 already keep an H100 busy",
          most, engines_per_device, runtime::format_bytes(kDeviceBytesPerEngine));
    }
    fail(
        "engines_per_device must be at most {} on the CPU (got {}): engines there share the {} "
        "hardware thread(s), so more only hold more memory (about {} each) and run no faster",
        most, engines_per_device, std::max(1u, std::thread::hardware_concurrency()),
        runtime::format_bytes(kHostBytesPerEngine));
  }
  const std::uintmax_t memory = memory_budget_bytes();
  const std::uintmax_t need = kHostBytesPerEngine *
                              static_cast<std::uintmax_t>(engines_per_device) *
                              std::max<std::uintmax_t>(1, devices);
  if (memory > 0 && need > memory) {
    fail(
        "engines_per_device {}: {} engine(s) hold about {} of memory (about {} each), more than "
        "this machine's budget of {} for them (half the memory parley may use)",
        engines_per_device, need / kHostBytesPerEngine, runtime::format_bytes(need),
        runtime::format_bytes(kHostBytesPerEngine), runtime::format_bytes(memory));
  }
}

std::vector<pipeline::DiarizationConfig> engine_configs(const pipeline::DiarizationConfig& config,
                                                        const std::vector<int>& devices,
                                                        int engines_per_device) {
  if (engines_per_device < 1) {
    fail("engines_per_device must be at least 1 (got {})", engines_per_device);
  }
  if (engines_per_device > kMaxEnginesPerDevice) {
    check_engines_per_device(engines_per_device, true, std::max<std::size_t>(1, devices.size()));
  }
  std::vector<pipeline::DiarizationConfig> configs;
  if (devices.empty()) {
    configs.assign(static_cast<std::size_t>(engines_per_device), config);
    return configs;
  }
  for (const int device : devices) {
    if (device < 0) fail("device numbers must not be negative (got {})", device);
    pipeline::DiarizationConfig on_device = config;
    const std::string id = std::to_string(device);
    if (on_device.placement) on_device.placement->options["device_id"] = id;
    on_device.segmentation_provider_options["device_id"] = id;
    on_device.embedding_provider_options["device_id"] = id;
    for (int copy = 0; copy < engines_per_device; ++copy) configs.push_back(on_device);
  }
  return configs;
}

CorpusEngine::CorpusEngine(const pipeline::DiarizationModels& models,
                           const std::vector<pipeline::DiarizationConfig>& engines,
                           CorpusConfig config)
    : config_(std::move(config)) {
  config_.validate();
  if (engines.empty()) fail("a corpus engine needs at least one engine configuration");
  // Engines on one device run the same sessions: their sessions' settings name the device.
  const auto sessions = std::make_shared<runtime::SessionShare>();
  // Built at once: each device's context, sessions and first allocations, and each engine's
  // host-side model preparation, take long enough that one after the other would multiply the
  // loading time by the engine count. The share creates a session once however many ask for it.
  diarizers_.resize(engines.size());
  std::vector<std::exception_ptr> errors(engines.size());
  {
    std::vector<std::jthread> builders;
    builders.reserve(engines.size());
    for (std::size_t i = 0; i < engines.size(); ++i) {
      builders.emplace_back([&, i] {
        try {
          diarizers_[i] = std::make_unique<pipeline::Diarizer>(models, engines[i], sessions);
        } catch (...) {
          errors[i] = std::current_exception();
        }
      });
    }
  }
  for (const auto& error : errors) {
    if (error) std::rethrow_exception(error);
  }
}

CorpusEngine::~CorpusEngine() = default;

// The state of one run(): its queues, its threads' counters and the first failure of the
// result callback.
struct CorpusEngine::Run {
  struct Decoded {
    std::size_t index = 0;
    CorpusRecording recording;
    audio::DecodedAudio audio;
    double decode_seconds = 0.0;
    Clock::time_point start;
    Clock::time_point decoded;  // when it was handed to the engines (traced runs)
  };
  struct Embedded {
    Decoded decoded;  // samples released once embedded
    pipeline::DiarizationIntermediates intermediates;
    StageTimes times;
    std::size_t engine = 0;
    std::size_t group_size = 1;
  };

  Run(CorpusEngine& owner, const RecordingSource& source, const ResultCallback& callback,
      const StageCallback& stage_callback, const std::atomic<bool>* stop_flag,
      TraceRecorder* trace_recorder)
      : engine(owner),
        next(source),
        on_result(callback),
        on_stage(stage_callback),
        stop(stop_flag),
        decoded(owner.config_.decoded_per_engine * owner.diarizers_.size()),
        // Clustering keeps up with the networks; a short queue bounds what waits for it.
        embedded(static_cast<std::size_t>(owner.config_.clustering_threads) * 2),
        recorder(trace_recorder) {}

  // The trace lane of a track of process `pid`, empty when the run is not traced.
  TraceLane lane(std::uint32_t pid, std::uint32_t track) const {
    return recorder != nullptr ? TraceLane{recorder, pid, track, nullptr} : TraceLane{};
  }
  static std::uint32_t engine_process(std::size_t engine_index) {
    return static_cast<std::uint32_t>(engine_index) + 1;
  }
  // How many recordings wait in a queue, as a trace's counter (traced runs only).
  void count(std::string_view queue, std::atomic<long>& waiting, long change) {
    const long now = waiting += change;
    if (recorder != nullptr) {
      recorder->counter(queue, kTraceCorpusProcess, Clock::now(), static_cast<double>(now));
    }
  }

  bool stopping() const { return aborted.load() || (stop != nullptr && stop->load()); }
  bool abandoning() const {
    return engine.config_.abandon_on_stop && stop != nullptr && stop->load();
  }

  void abort() {
    aborted = true;
    decoded.cancel();
    decoded.close();
    embedded.cancel();
    embedded.close();
  }

  void report(RecordingOutcome outcome) {
    std::lock_guard lock(report_mutex);
    if (failure) return;
    try {
      on_result(std::move(outcome));
    } catch (...) {
      failure = std::current_exception();
      abort();
    }
  }

  void report_failure(std::size_t index, const std::string& message, double decode_seconds,
                      Clock::time_point start, std::size_t engine_index = 0) {
    RecordingOutcome outcome;
    outcome.index = index;
    outcome.error = message;
    outcome.decode_seconds = decode_seconds;
    outcome.wall_seconds = seconds_since(start);
    outcome.engine = engine_index;
    report(std::move(outcome));
  }

  void stage(std::size_t index, std::string_view name) {
    if (on_stage) on_stage(index, name);
  }

  // The source's next recording and its index; nullopt when it has no more (or failed, which
  // stops the run: the source is the caller's, like the result callback).
  std::optional<std::pair<std::size_t, CorpusRecording>> take_next() {
    std::lock_guard lock(source_mutex);
    if (source_done) return std::nullopt;
    try {
      std::optional<CorpusRecording> recording = next();
      if (!recording) {
        source_done = true;
        return std::nullopt;
      }
      return std::make_pair(taken++, std::move(*recording));
    } catch (...) {
      source_done = true;
      std::lock_guard report_lock(report_mutex);
      if (!failure) failure = std::current_exception();
      abort();
      return std::nullopt;
    }
  }

  void decode_loop(int decoder) {
    const TraceLaneBinding binding(
        lane(kTraceCorpusProcess, kTraceDecoderTrack + static_cast<std::uint32_t>(decoder)),
        recorder != nullptr ? fmt::format("decoder {}", decoder) : std::string());
    for (;;) {
      if (stopping()) break;
      auto taken_recording = take_next();
      if (!taken_recording) break;
      Decoded item;
      item.index = taken_recording->first;
      item.recording = std::move(taken_recording->second);
      item.start = Clock::now();
      TraceSpan span("decode");
      if (span) span.args().recordings = {shown_name(item.recording)};
      if (item.recording.samples) {
        item.audio = audio::DecodedAudio(item.recording.samples);
      } else {
        stage(item.index, "decoding");
        try {
          item.audio =
              audio::DecodedAudio::decode(item.recording.audio, engine.config_.spill_samples);
        } catch (const std::exception& error) {
          report_failure(item.index, error.what(), seconds_since(item.start), item.start);
          continue;
        }
      }
      if (span) {
        span.args().number("audio_seconds",
                           static_cast<double>(item.audio.samples().size()) / kSampleRate);
        span.finish();
      }
      item.decode_seconds = seconds_since(item.start);
      item.decoded = Clock::now();
      // Counted before the push: an engine may take it before push returns.
      count("decoded recordings waiting", decoded_waiting, 1);
      if (!decoded.push(std::move(item))) break;
    }
    if (--decoders_running == 0) decoded.close();
  }

  // About how many chunks a recording makes: what grouping weighs (it does not change results).
  std::size_t chunks_of(const Decoded& item) const {
    const double step = engine.diarizers_.front()->config().step_seconds;
    const double seconds = static_cast<double>(item.audio.samples().size()) / kSampleRate;
    return static_cast<std::size_t>(seconds / step) + 1;
  }

  std::size_t fill_chunks(std::size_t engine_index) const {
    if (engine.config_.fill_chunks) return *engine.config_.fill_chunks;
    return engine.diarizers_[engine_index]->segmentation_chunks_in_flight();
  }

  void engine_loop(std::size_t engine_index) {
    const TraceLaneBinding binding(
        lane(engine_process(engine_index), kTraceNetworksTrack),
        recorder != nullptr ? fmt::format("engine {}: networks", engine_index) : std::string());
    while (!stopping()) {
      const auto wait_start = Clock::now();
      std::optional<Decoded> first = decoded.pop();
      if (!first) break;
      std::vector<Decoded> group;
      std::size_t chunks = chunks_of(*first);
      group.push_back(std::move(*first));
      taken_by(engine_index, group.back());
      const std::size_t fill = std::min(engine.config_.group_chunks, fill_chunks(engine_index));
      while (chunks < engine.config_.group_chunks) {
        // Below `fill` the engine waits for the decoders: their next recording comes sooner
        // than a half-padded batch would take.
        std::optional<Decoded> more = chunks < fill ? decoded.pop() : decoded.try_pop();
        if (!more) break;
        chunks += chunks_of(*more);
        group.push_back(std::move(*more));
        taken_by(engine_index, group.back());
      }
      const double waited = seconds_since(wait_start);
      if (recorder != nullptr) {
        TraceArgs args;
        for (const auto& item : group) args.recordings.push_back(shown_name(item.recording));
        args.number("chunks", static_cast<double>(chunks))
            .number("fill", static_cast<double>(fill));
        recorder->complete("waiting for decoded audio", kTraceWait, engine_process(engine_index),
                           kTraceNetworksTrack, wait_start, Clock::now(), std::move(args));
      }
      const auto networks_start = Clock::now();
      const std::size_t recordings = group.size();
      embed_group(engine_index, std::move(group));
      // Where an engine's time goes between groups (SPDLOG_LEVEL=debug): waiting for decoded
      // audio, or for room in the clustering queue (inside the networks' time).
      spdlog::debug(
          "engine {}: {} recording(s), about {} chunks, {:.3f} s in the networks after "
          "waiting {:.3f} s for decoded audio",
          engine_index, recordings, chunks, seconds_since(networks_start), waited);
    }
    if (--engines_running == 0) {
      // No engine takes recordings any more (all done, or asked to stop): decoders still
      // waiting to hand one over must not wait forever.
      decoded.cancel();
      embedded.close();
    }
  }

  // A recording an engine took from the decoded queue: its wait there, in a traced run.
  void taken_by(std::size_t engine_index, const Decoded& item) {
    count("decoded recordings waiting", decoded_waiting, -1);
    if (recorder == nullptr) return;
    TraceArgs args;
    args.recordings = {shown_name(item.recording)};
    args.number("engine", static_cast<double>(engine_index));
    recorder->span("waiting for an engine", kTraceWait, kTraceCorpusProcess, item.index,
                   item.decoded, Clock::now(), std::move(args));
  }

  // What log lines written while `group` is in the networks are about.
  static std::string log_subject(const std::vector<Decoded>& group) {
    constexpr std::size_t kNamed = 3;
    std::string names;
    for (std::size_t k = 0; k < std::min(group.size(), kNamed); ++k) {
      names += (k == 0 ? "" : ", ") + shown_name(group[k].recording);
    }
    if (group.size() == 1) return names;
    return fmt::format("one of {}{} ({} recordings sharing model calls)", names,
                       group.size() > kNamed ? ", ..." : "", group.size());
  }

  void embed_group(std::size_t engine_index, std::vector<Decoded> group) {
    pipeline::Diarizer& diarizer = *engine.diarizers_[engine_index];
    const LogSubject subject(log_subject(group));
    std::vector<std::span<const float>> recordings;
    for (const auto& item : group) {
      recordings.emplace_back(item.audio.samples());
      stage(item.index, "networks");
    }
    // Events on this thread, and on the segmentation threads it starts, name the group's
    // recordings (the scheduler's embedding names each by its place in the group).
    std::vector<std::string> names;
    if (recorder != nullptr) {
      for (const auto& item : group) names.push_back(shown_name(item.recording));
    }
    const TraceLaneBinding binding(
        recorder != nullptr
            ? TraceLane{recorder, engine_process(engine_index), kTraceNetworksTrack, &names}
            : TraceLane{});
    TraceSpan networks("networks");
    std::vector<StageTimes> times;
    std::vector<pipeline::DiarizationIntermediates> intermediates;
    // Progress steps are where the networks can be left (abandon_on_stop).
    class StopCheck : public ProgressSink {
     public:
      explicit StopCheck(const Run& run) : run_(run) {}
      void begin(const std::string&, std::size_t) override { check(); }
      void update(std::size_t) override { check(); }
      void end() override {}

     private:
      void check() const {
        if (run_.abandoning()) throw std::runtime_error("the run was stopped");
      }
      const Run& run_;
    } stop_check(*this);
    try {
      intermediates = diarizer.segment_and_embed(
          recordings, times, stop_check,
          [&group](std::size_t k, std::size_t sample) { group[k].audio.release_before(sample); });
    } catch (const std::exception& error) {
      networks.finish();
      if (abandoning()) return;
      if (group.size() == 1) {
        report_failure(group.front().index, error.what(), group.front().decode_seconds,
                       group.front().start, engine_index);
        return;
      }
      // One bad recording must not fail the others that shared its model calls.
      for (auto& item : group) {
        std::vector<Decoded> alone;
        alone.push_back(std::move(item));
        embed_group(engine_index, std::move(alone));
      }
      return;
    }
    networks.finish();
    const std::size_t group_size = group.size();
    for (std::size_t k = 0; k < group.size(); ++k) {
      Embedded item;
      item.intermediates = std::move(intermediates[k]);
      item.times.add("decode", group[k].decode_seconds);
      for (const auto& [stage, seconds] : times[k].entries()) item.times.add(stage, seconds);
      group[k].audio = {};
      item.decoded = std::move(group[k]);
      item.engine = engine_index;
      item.group_size = group_size;
      TraceSpan handing_on("waiting for clustering", kTraceWait);
      if (handing_on) handing_on.args().recordings = {names[k]};
      count("embedded recordings waiting", embedded_waiting, 1);
      if (!embedded.push(std::move(item))) return;
    }
  }

  void clustering_loop(int thread) {
    const TraceLane clustering_lane =
        lane(kTraceCorpusProcess, kTraceClusteringTrack + static_cast<std::uint32_t>(thread));
    const TraceLaneBinding binding(clustering_lane, recorder != nullptr
                                                        ? fmt::format("clustering {}", thread)
                                                        : std::string());
    for (;;) {
      std::optional<Embedded> item = embedded.pop();
      if (!item) break;
      count("embedded recordings waiting", embedded_waiting, -1);
      // Clustering's and reconstruction's events (pipeline/diarizer.cpp) name the recording.
      std::vector<std::string> name;
      if (recorder != nullptr) name.push_back(shown_name(item->decoded.recording));
      TraceLane recording_lane = clustering_lane;
      recording_lane.recordings = &name;
      const TraceLaneBinding recording_binding(recording_lane);
      RecordingOutcome outcome;
      outcome.index = item->decoded.index;
      outcome.decode_seconds = item->decoded.decode_seconds;
      outcome.engine = item->engine;
      outcome.group_size = item->group_size;
      stage(outcome.index, "clustering");
      const LogSubject subject(shown_name(item->decoded.recording));
      try {
        const CorpusRecording& recording = item->decoded.recording;
        outcome.result =
            recording.output
                ? engine.diarizers_.front()->cluster(item->intermediates, recording.uri,
                                                     item->times, *recording.output)
                : engine.diarizers_.front()->cluster(item->intermediates, recording.uri,
                                                     item->times, recording.speakers);
      } catch (const std::exception& error) {
        outcome.error = error.what();
      }
      outcome.wall_seconds = seconds_since(item->decoded.start);
      // The result callback writes the outputs (corpus/corpus_run.h), or prints them.
      TraceSpan writing("writing");
      if (writing) writing.args().number("engine", static_cast<double>(outcome.engine));
      report(std::move(outcome));
    }
  }

  CorpusEngine& engine;
  const RecordingSource& next;
  const ResultCallback& on_result;
  const StageCallback& on_stage;
  const std::atomic<bool>* stop;
  BoundedQueue<Decoded> decoded;
  BoundedQueue<Embedded> embedded;
  std::mutex source_mutex;
  bool source_done = false;
  std::size_t taken = 0;
  std::atomic<int> decoders_running{0};
  std::atomic<int> engines_running{0};
  std::atomic<bool> aborted{false};
  std::mutex report_mutex;
  std::exception_ptr failure;
  TraceRecorder* recorder = nullptr;  // null: not traced
  std::atomic<long> decoded_waiting{0};
  std::atomic<long> embedded_waiting{0};
};

void CorpusEngine::run(std::span<const CorpusRecording> inputs, const ResultCallback& on_result,
                       const std::atomic<bool>* stop) {
  std::size_t position = 0;
  run(
      [&]() -> std::optional<CorpusRecording> {
        if (position == inputs.size()) return std::nullopt;
        return inputs[position++];
      },
      on_result, {}, stop);
}

void CorpusEngine::run(const RecordingSource& next, const ResultCallback& on_result,
                       const StageCallback& on_stage, const std::atomic<bool>* stop) {
  std::unique_ptr<TraceRecorder> recorder;
  if (!config_.trace_file.empty()) {
    recorder = std::make_unique<TraceRecorder>();
    recorder->name_process(kTraceCorpusProcess, "corpus: decoding, clustering, writing");
    for (std::size_t e = 0; e < diarizers_.size(); ++e) {
      const std::string device = device_label(*diarizers_[e]);
      recorder->name_process(Run::engine_process(e), fmt::format("engine {} ({})", e, device),
                             "device " + device);
    }
  }
  Run state(*this, next, on_result, on_stage, stop, recorder.get());
  const int decoders = config_.decode_threads;
  state.decoders_running = decoders;
  state.engines_running = static_cast<int>(diarizers_.size());
  {
    std::vector<std::jthread> threads;
    for (int i = 0; i < decoders; ++i) threads.emplace_back([&state, i] { state.decode_loop(i); });
    for (std::size_t e = 0; e < diarizers_.size(); ++e) {
      threads.emplace_back([&state, e] { state.engine_loop(e); });
    }
    for (int i = 0; i < config_.clustering_threads; ++i) {
      threads.emplace_back([&state, i] { state.clustering_loop(i); });
    }
  }
  if (recorder) {
    // Written also when the run failed (the trace shows how far it went); a trace that cannot be
    // written fails a run that did not fail otherwise.
    try {
      recorder->write(config_.trace_file);
    } catch (const std::exception& error) {
      if (!state.failure) throw;
      spdlog::warn("trace_file: {}", error.what());
    }
  }
  if (state.failure) std::rethrow_exception(state.failure);
}

}  // namespace parley::corpus
