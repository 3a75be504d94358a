#include "stream/stream_diarizer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <fstream>
#include <limits>
#include <utility>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "audio/resampler.h"
#include "core/error.h"
#include "core/linear_assignment.h"
#include "core/progress.h"
#include "core/temporary_directory.h"
#include "frames/segments.h"
#include "frames/sliding_window.h"
#include "stages/rolling_trunk.h"
#include "stream/live_names.h"
#include "stream/stream_options.h"

namespace parley::stream {

using frames::Turn;
namespace {

using Clock = StreamClock;
constexpr double kModelRate = 16000.0;
constexpr std::int64_t kFrameStepSamples = 270;  // segmentation-3.0's frame step at 16 kHz
// A window is one chunk: its segmentation call has 2 rows, not the whole batch or, on a GPU, the
// accelerator's multiple of 64 (the rest are padding, and the streams sharing a model take turns
// on it). On the CPU 2 rows give the same bits as any larger batch; 1 row takes other kernels.
constexpr std::size_t kSegmentationRows = 2;

// pipeline::ProgressSink that reports nowhere: a window is far too short to draw progress for.
class NoProgress : public ProgressSink {
 public:
  void begin(const std::string&, std::size_t) override {}
  void update(std::size_t) override {}
  void end() override {}
};

// The community-1 networks through the batch pipeline: a 10 s window is a recording of exactly
// one chunk, so its segmentation and embeddings are the pipeline's for that chunk.
class DiarizerWindowModel : public WindowModel {
 public:
  DiarizerWindowModel(pipeline::DiarizationModels models, pipeline::DiarizationConfig config)
      : owned_(std::make_unique<pipeline::Diarizer>(std::move(models), std::move(config))),
        diarizer_(*owned_) {}
  explicit DiarizerWindowModel(pipeline::Diarizer& diarizer) : diarizer_(diarizer) {}

  WindowAnalysis analyze(std::span<const float> window) const override {
    StageTimes ignored;
    return analyze_timed(window, ignored);
  }

  WindowAnalysis analyze_timed(std::span<const float> window, StageTimes& stages) const override {
    check_window(window);
    // Diarizer runs one segment_and_embed at a time.
    const std::lock_guard lock(batch_mutex());
    std::vector<StageTimes> times(1);
    const std::span<const float> recordings[] = {window};
    NoProgress progress;
    const auto start = Clock::now();
    std::vector<pipeline::DiarizationIntermediates> out =
        diarizer_.segment_and_embed(recordings, times, progress, {}, {}, kSegmentationRows);
    const double total = std::chrono::duration<double>(Clock::now() - start).count();
    add_model_stages(times.front(), total, diarizer_.shared_trunk_times(), stages);
    return one_window(out.front());
  }

  pipeline::Diarizer* batch_diarizer() const override { return &diarizer_; }

  std::unique_ptr<WindowModelState> open_stream(const StreamConfig& config,
                                                std::size_t step_samples) const override {
    if (config.embedding == StreamEmbedding::kWindow) return nullptr;
    // The extractor reads its graph's receptive field at first use; streams open on many threads.
    const std::lock_guard lock(batch_mutex());
    stages::EmbeddingExtractor& extractor = diarizer_.embedding_extractor();
    std::string why;
    const bool supported = stages::rolling_trunk_supported(extractor, step_samples, &why);
    if (config.embedding == StreamEmbedding::kAuto && !rolling_by_default(extractor, supported)) {
      return nullptr;
    }
    if (!supported) fail("stream embedding rolling: {}", why);
    stages::RollingTrunkConfig rolling;
    rolling.window_samples = window_samples();
    rolling.step_samples = step_samples;
    rolling.threads = diarizer_.config().threads;
    return std::make_unique<RollingState>(extractor, rolling);
  }

  WindowAnalysis analyze_step(WindowModelState* state, std::span<const float> window,
                              StageTimes& stages) const override {
    if (state == nullptr) return analyze_timed(window, stages);
    check_window(window);
    stages::RollingTrunk& trunk = static_cast<RollingState&>(*state).trunk;
    const double features_before = trunk.feature_seconds();
    const double trunk_before = trunk.trunk_seconds();
    const double pooling_before = trunk.pooling_seconds();
    // The step's features are the stream's own work: outside the lock the streams share.
    const NdArray<float> features = trunk.prepare(window);
    const std::lock_guard lock(batch_mutex());
    std::vector<StageTimes> times(1);
    const std::span<const float> recordings[] = {window};
    NoProgress progress;
    const auto start = Clock::now();
    std::vector<pipeline::DiarizationIntermediates> out =
        diarizer_.segment_and_embed(recordings, times, progress, {}, {}, kSegmentationRows,
                                    [&](std::span<const float>, const frames::ChunkPlan&,
                                        std::size_t, const NdArray<float>& segmentations) {
                                      trunk.accept(trunk.run_trunk(features));
                                      return trunk.embed(segmentations);
                                    });
    const double total = std::chrono::duration<double>(Clock::now() - start).count();
    // The features were computed before the call: they are no part of its embedding time.
    stages.add("embedding features", trunk.feature_seconds() - features_before);
    StageTimes inside;
    inside.add("embedding trunk", trunk.trunk_seconds() - trunk_before);
    inside.add("embedding pooling", trunk.pooling_seconds() - pooling_before);
    add_model_stages(times.front(), total, inside, stages);
    return one_window(out.front());
  }

 private:
  struct RollingState : WindowModelState {
    RollingState(stages::EmbeddingExtractor& extractor, const stages::RollingTrunkConfig& c)
        : trunk(extractor, c) {}
    std::size_t bytes() const override { return trunk.bytes(); }
    stages::RollingTrunk trunk;
  };

  // auto's choice (stream::rolling_by_default).
  bool rolling_by_default(const stages::EmbeddingExtractor& extractor, bool supported) const {
    RollingFacts facts;
    facts.supported = supported;
    facts.shared_mode = diarizer_.config().embedding_mode == stages::EmbeddingMode::kShared;
    facts.local_field =
        extractor.trunk_receptive_field().kind == graph::TimeReceptiveField::Kind::kLocal;
    facts.embedding_on_cpu = extractor.config().session.provider == runtime::ProviderId::kCpu &&
                             !extractor.opens_per_shape();
    return stream::rolling_by_default(facts);
  }

  void check_window(std::span<const float> window) const {
    if (window.size() != window_samples()) {
      fail("stream window: {} samples given, {} expected", window.size(), window_samples());
    }
  }

  static WindowAnalysis one_window(pipeline::DiarizationIntermediates& one) {
    const std::size_t frames = one.segmentations.dim(1);
    const std::size_t speakers = one.segmentations.dim(2);
    const std::size_t dimension = one.embeddings.dim(2);
    std::vector<float> segmentation(one.segmentations.data(),
                                    one.segmentations.data() + frames * speakers);
    std::vector<float> embeddings(one.embeddings.data(),
                                  one.embeddings.data() + speakers * dimension);
    return {NdArray<float>({frames, speakers}, std::move(segmentation)),
            NdArray<float>({speakers, dimension}, std::move(embeddings))};
  }

  // segment_and_embed's stages, its embedding split as `split` measured it (when it ran), and
  // the rest of the call (scheduling, copies) as "model other".
  static void add_model_stages(const StageTimes& times, double total, const StageTimes& split,
                               StageTimes& stages) {
    double split_total = 0.0;
    for (const auto& [stage, seconds] : split.entries()) split_total += seconds;
    for (const auto& [stage, seconds] : times.entries()) {
      if (stage == "embedding" && !split.entries().empty()) {
        for (const auto& [part, part_seconds] : split.entries()) stages.add(part, part_seconds);
        stages.add("embedding other", std::max(0.0, seconds - split_total));
      } else {
        stages.add(stage, seconds);
      }
    }
    stages.add("model other", std::max(0.0, total - times.total()));
  }

  std::unique_ptr<pipeline::Diarizer> owned_;
  pipeline::Diarizer& diarizer_;
};

double frame_middle(std::int64_t frame) {
  const frames::SlidingWindow frames = frames::segmentation3_frames();
  return frames.middle(frame);
}

// Nearest integer to a / b for b > 0 (halves away from zero are rare enough; any fixed rule
// keeps the result independent of how the audio was pushed).
std::int64_t rounded_division(std::int64_t a, std::int64_t b) {
  const std::int64_t twice = 2 * a + b;
  return twice >= 0 ? twice / (2 * b) : -((-twice + 2 * b - 1) / (2 * b));
}

std::string json_number(double value) { return fmt::format("{:.3f}", value); }

// final_recluster's temporary file of 16 kHz float samples, mapped read-only: the batch pipeline
// reads it front to back and hands back the pages it has passed, so a 3-hour stream (690 MB of
// samples) keeps a window of it resident rather than all of it.
class MappedSamples {
 public:
  MappedSamples(const std::filesystem::path& path, std::size_t count) {
    if (count == 0) return;
    const int descriptor = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (descriptor < 0) {
      fail("cannot read back the stream's temporary audio file {}: {}", path.string(),
           std::strerror(errno));
    }
    struct stat status {};
    const std::size_t bytes = count * sizeof(float);
    void* mapping = MAP_FAILED;
    int error = 0;
    // A file shorter than the mapping would fault when read past its end.
    if (::fstat(descriptor, &status) != 0) {
      error = errno;
    } else if (static_cast<std::size_t>(status.st_size) < bytes) {
      error = EIO;
    } else {
      mapping = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, descriptor, 0);
      error = errno;
    }
    ::close(descriptor);
    if (mapping == MAP_FAILED) {
      fail("cannot read back the stream's temporary audio file {} ({} samples): {}", path.string(),
           count, std::strerror(error));
    }
    mapping_ = mapping;
    bytes_ = bytes;
  }
  ~MappedSamples() {
    if (mapping_ != nullptr) ::munmap(mapping_, bytes_);
  }
  MappedSamples(const MappedSamples&) = delete;
  MappedSamples& operator=(const MappedSamples&) = delete;

  std::span<const float> samples() const {
    return {static_cast<const float*>(mapping_), bytes_ / sizeof(float)};
  }
  // Pages holding only samples before `sample` leave the process (read again if needed).
  void release_before(std::size_t sample) const {
    if (mapping_ == nullptr) return;
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    const std::size_t bytes = std::min(sample * sizeof(float), bytes_) / page * page;
    if (bytes > 0) ::madvise(mapping_, bytes, MADV_DONTNEED);
  }

 private:
  void* mapping_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace

// ---- StreamConfig ------------------------------------------------------------------------------

const char* stream_embedding_name(StreamEmbedding embedding) {
  switch (embedding) {
    case StreamEmbedding::kWindow:
      return "window";
    case StreamEmbedding::kRolling:
      return "rolling";
    case StreamEmbedding::kAuto:
      break;
  }
  return "auto";
}

bool rolling_by_default(const RollingFacts& facts) {
  return facts.supported && facts.shared_mode && facts.local_field && facts.embedding_on_cpu;
}

StreamEmbedding parse_stream_embedding(const std::string& name) {
  if (name == "auto") return StreamEmbedding::kAuto;
  if (name == "window") return StreamEmbedding::kWindow;
  if (name == "rolling") return StreamEmbedding::kRolling;
  fail(
      "unknown stream embedding '{}': use auto, window (each window's trunk whole) or rolling "
      "(the trunk's frames kept between steps)",
      name);
}

void StreamConfig::validate() const {
  // The bounds of the stream's option table, which every face reads (stream/stream_options.h).
  stream_option("sample_rate").check_value(sample_rate);
  stream_option("step").check_value(step_seconds);
  stream_option("latency").check_value(latency_seconds);
  if (latency_seconds < step_seconds) {
    fail(
        "stream latency_seconds ({}) must be at least step_seconds ({}): a frame is final only "
        "after a window has ended past it",
        latency_seconds, step_seconds);
  }
  stream_option("max_speakers").check_value(max_speakers);
  stream_option("match_threshold").check_value(match_threshold);
  if (!(min_update_activity >= 0.0 && min_update_activity <= 1.0)) {
    fail("stream min_update_activity must be between 0 and 1 (got {})", min_update_activity);
  }
  if (min_active_frames < 1) fail("stream min_active_frames must be at least 1");
  if (embedding != StreamEmbedding::kAuto && embedding != StreamEmbedding::kWindow &&
      embedding != StreamEmbedding::kRolling) {
    fail("stream embedding must be auto, window or rolling");
  }
}

std::string StreamConfig::to_string() const {
  return fmt::format(
      "StreamConfig(sample_rate={}, step={}s, latency={}s, max_speakers={}, "
      "match_threshold={}, min_update_activity={}, min_active_frames={}, provisional={}, "
      "final_recluster={}, embedding={})",
      sample_rate, step_seconds, latency_seconds, max_speakers, match_threshold,
      min_update_activity, min_active_frames, provisional, final_recluster,
      stream_embedding_name(embedding));
}

// ---- StreamModels ------------------------------------------------------------------------------

StreamModels::StreamModels(pipeline::DiarizationModels models, pipeline::DiarizationConfig config)
    : model_(std::make_unique<DiarizerWindowModel>(std::move(models), std::move(config))) {}

StreamModels::StreamModels(pipeline::Diarizer& diarizer)
    : model_(std::make_unique<DiarizerWindowModel>(diarizer)) {}

StreamModels::StreamModels(std::unique_ptr<WindowModel> model) : model_(std::move(model)) {
  if (!model_) fail("StreamModels: no model given");
}

StreamModels::~StreamModels() = default;

// ---- StreamEvent -------------------------------------------------------------------------------

const char* kind_name(StreamEvent::Kind kind) {
  switch (kind) {
    case StreamEvent::Kind::kTurnStart:
      return "turn_start";
    case StreamEvent::Kind::kTurnUpdate:
      return "turn_update";
    case StreamEvent::Kind::kTurnEnd:
      return "turn_end";
  }
  return "unknown";
}

std::string StreamEvent::to_json() const {
  // Written by hand so that times keep three decimals, as the RTTM and JSON outputs do.
  const std::string name = speaker.empty() ? "null" : nlohmann::json(speaker).dump();
  std::string line = fmt::format(R"({{"type":"{}","speaker":{},)", kind_name(kind), name);
  if (candidate) line += fmt::format(R"("candidate":{},)", *candidate);
  line += fmt::format(R"("start":{})", json_number(start));
  if (kind != Kind::kTurnStart) line += fmt::format(R"(,"end":{})", json_number(end));
  line += fmt::format(R"(,"audio_time":{},"latency":{}}})", json_number(audio_time),
                      json_number(latency_seconds));
  return line;
}

bool StreamEvent::same_decision(const StreamEvent& other) const {
  return kind == other.kind && speaker == other.speaker && candidate == other.candidate &&
         start == other.start && end == other.end && audio_time == other.audio_time;
}

// ---- StreamDiarizer ----------------------------------------------------------------------------

struct StreamDiarizer::Impl {
  const WindowModel& model;
  StreamConfig config;
  std::size_t window_samples;
  std::size_t window_frames;
  std::size_t step_samples;

  // What the model keeps between this stream's windows (the rolling trunk); null: none.
  std::unique_ptr<WindowModelState> model_state;
  std::optional<audio::Resampler> resampler;
  std::vector<float> resampled;  // scratch for the resampler's output
  std::vector<float> window;     // the last window_samples samples, zero before the stream
  std::vector<float> dropped;    // the samples the step under way moved out of the window
  // 16 kHz samples not yet in a window: less than a step, unless a model call failed (its step
  // and the samples after it wait here for the next push() or finish()).
  std::vector<float> pending;
  std::int64_t processed = 0;  // 16 kHz samples in windows so far (whole steps)
  std::int64_t received = 0;   // 16 kHz samples received so far
  std::uint64_t pushed = 0;    // samples pushed, at config.sample_rate
  std::size_t steps = 0;
  StageTimes stage_times;  // seconds by stage over all steps (StreamDiarizer::stage_times)

  // Per-frame aggregation of the frames not final yet: frame first_open + i is accumulator i.
  struct FrameSum {
    std::vector<float> sum;  // per stream speaker (grows with the speakers)
    float windows = 0.0F;    // windows that covered the frame
  };
  std::deque<FrameSum> open;
  std::int64_t first_open = 0;

  // Speakers: the sum of their unit-length embeddings.
  std::vector<std::vector<double>> centroids;
  std::size_t dimension = 0;
  // The number each speaker is reported under (SPEAKER_NN), given at its first final turn start:
  // a speaker founded by a blip that never becomes final activity (its window outvoted by the
  // others on the same frames) is never named, so every reported label has a turn, and the
  // labels go 00, 01, ... in the order speakers first speak, each kept for the whole stream.
  std::vector<std::optional<std::size_t>> label;
  std::size_t labelled = 0;

  // Final state: each speaker's open turn start (frame middle), or none.
  std::vector<std::optional<double>> open_turn;
  std::optional<std::pair<std::size_t, double>> open_exclusive;
  std::vector<Turn> turns;
  std::vector<Turn> exclusive_turns;

  std::vector<StreamEvent> events;
  std::function<void(const StreamEvent&)> callback;

  // When audio arrived: (16 kHz samples received by then, wall time), coalesced.
  std::deque<std::pair<std::int64_t, Clock::time_point>> arrivals;

  // final_recluster: every 16 kHz sample, in a temporary file.
  std::optional<TemporaryDirectory> audio_folder;
  std::ofstream audio_file;
  bool closed = false;    // finish() began: no more samples
  bool finished = false;  // finish()'s steps all ran

  Impl(const WindowModel& m, const StreamConfig& c)
      : model(m),
        config(c),
        window_samples(m.window_samples()),
        window_frames(m.window_frames()),
        step_samples(static_cast<std::size_t>(std::llround(c.step_seconds * kModelRate))),
        window(window_samples, 0.0F) {
    if (step_samples > window_samples) {
      fail("stream step_seconds ({}) must not exceed the model's window ({} s)",
           config.step_seconds, static_cast<double>(window_samples) / kModelRate);
    }
    model_state = model.open_stream(config, step_samples);
    if (config.sample_rate != kModelRate) resampler.emplace(config.sample_rate, kModelRate);
    if (config.final_recluster) {
      if (model.batch_diarizer() == nullptr) {
        fail("stream final_recluster needs the batch pipeline, which this model does not have");
      }
      audio_folder.emplace("parley-stream-");  // under $TMPDIR
      audio_file.open((*audio_folder) / "audio.f32", std::ios::binary);
      if (!audio_file)
        fail("cannot create the temporary audio file in {}", audio_folder->path().string());
    }
  }

  static StreamEvent event(StreamEvent::Kind kind, std::string speaker, double start, double end) {
    StreamEvent made;
    made.kind = kind;
    made.speaker = std::move(speaker);
    made.start = start;
    made.end = end;
    return made;
  }

  // The clock is read here, once the step's compute is done: an event's latency includes it.
  void emit(StreamEvent event, double decisive_time) {
    const Clock::time_point now = Clock::now();
    event.audio_time = static_cast<double>(processed) / kModelRate;
    const auto decisive_sample = static_cast<std::int64_t>(std::ceil(decisive_time * kModelRate));
    Clock::time_point arrived = now;
    for (const auto& [count, when] : arrivals) {
      if (count >= decisive_sample) {
        arrived = when;
        break;
      }
    }
    event.latency_seconds = std::chrono::duration<double>(now - arrived).count();
    if (callback) {
      callback(event);
    } else {
      events.push_back(std::move(event));
    }
  }

  void note_arrival(Clock::time_point arrival) {
    if (!arrivals.empty() && (arrival - arrivals.back().second < std::chrono::milliseconds(5) ||
                              arrivals.size() >= 4096)) {
      // Close pushes share one record: the later samples count as arrived a little earlier.
      arrivals.back().first = received;
      arrivals.back().second = std::min(arrivals.back().second, arrival);
      if (arrivals.size() < 4096) return;
    } else {
      arrivals.emplace_back(received, arrival);
    }
    // Samples before the oldest open frame have made all their events.
    const auto oldest_needed =
        static_cast<std::int64_t>(std::floor(frame_middle(first_open) * kModelRate)) -
        static_cast<std::int64_t>(kModelRate);
    while (arrivals.size() > 1 && arrivals[1].first < oldest_needed) arrivals.pop_front();
  }

  // Takes the samples, whatever happens after, and runs every whole step now available.
  void accept(std::span<const float> samples16, Clock::time_point arrival) {
    if (!samples16.empty()) {
      if (audio_file.is_open()) {
        audio_file.write(reinterpret_cast<const char*>(samples16.data()),
                         static_cast<std::streamsize>(samples16.size_bytes()));
        if (!audio_file) fail("cannot write the stream's temporary audio file (disk full?)");
      }
      received += static_cast<std::int64_t>(samples16.size());
      note_arrival(arrival);
    }
    run_due_steps(samples16);
  }

  // The steps of the samples waiting and then of `more`. A step whose model call fails leaves
  // the stream as it was before it; it and the rest of `more` wait in `pending`, so that a
  // failed push() neither loses nor repeats audio when the stream goes on.
  void run_due_steps(std::span<const float> more) {
    std::size_t used = 0;
    try {
      while (true) {
        if (pending.size() >= step_samples) {
          run_step(std::span<const float>(pending).first(step_samples));
          pending.erase(pending.begin(),
                        pending.begin() + static_cast<std::ptrdiff_t>(step_samples));
          continue;
        }
        if (used == more.size()) break;
        const std::size_t take = std::min(step_samples - pending.size(), more.size() - used);
        pending.insert(pending.end(), more.begin() + static_cast<std::ptrdiff_t>(used),
                       more.begin() + static_cast<std::ptrdiff_t>(used + take));
        used += take;
      }
    } catch (...) {
      pending.insert(pending.end(), more.begin() + static_cast<std::ptrdiff_t>(used), more.end());
      throw;
    }
  }

  // Moves the window by one step of new samples (zero padded when fewer) and analyses it. The
  // stream's state changes only once the model has answered.
  void run_step(std::span<const float> step) {
    const auto moved = static_cast<std::ptrdiff_t>(step_samples);
    dropped.assign(window.begin(), window.begin() + moved);
    std::memmove(window.data(), window.data() + step_samples,
                 (window_samples - step_samples) * sizeof(float));
    std::fill(window.end() - moved, window.end(), 0.0F);
    std::copy(step.begin(), step.end(), window.end() - moved);
    WindowAnalysis analysis;
    try {
      analysis = model.analyze_step(model_state.get(), window, stage_times);
      if (analysis.segmentation.rank() != 2 || analysis.segmentation.dim(0) != window_frames ||
          analysis.embeddings.rank() != 2 ||
          analysis.embeddings.dim(0) != analysis.segmentation.dim(1)) {
        fail("stream model gave a window analysis of unexpected shape");
      }
    } catch (...) {
      std::memmove(window.data() + step_samples, window.data(),
                   (window_samples - step_samples) * sizeof(float));
      std::copy(dropped.begin(), dropped.end(), window.begin());
      // What the model kept between windows may be half way through this one: the step's next
      // attempt starts afresh (the rolling trunk's first pass takes the whole window).
      if (model_state) {
        model_state.reset();
        model_state = model.open_stream(config, step_samples);
      }
      throw;
    }
    processed += static_cast<std::int64_t>(step_samples);
    ++steps;
    std::vector<std::optional<std::size_t>> speakers;
    {
      const ScopedStageTimer timer(stage_times, "clustering");
      speakers = identify(analysis);
    }
    const ScopedStageTimer timer(stage_times, "aggregation");
    aggregate(analysis.segmentation, speakers);
    finalize_until(static_cast<double>(processed) / kModelRate - config.latency_seconds);
    if (config.provisional) provisional_events();
  }

  // diart's incremental clustering: the window's local speakers to stream speakers.
  std::vector<std::optional<std::size_t>> identify(const WindowAnalysis& analysis) {
    const NdArray<float>& segmentation = analysis.segmentation;
    const std::size_t locals = segmentation.dim(1);
    const std::size_t frames = segmentation.dim(0);
    if (dimension == 0) dimension = analysis.embeddings.dim(1);
    if (analysis.embeddings.dim(1) != dimension) fail("stream model changed its embedding size");

    const auto real =
        std::max<std::size_t>(1, static_cast<std::size_t>(processed / kFrameStepSamples));
    std::vector<std::optional<std::size_t>> result(locals);
    std::vector<std::size_t> active;
    std::vector<bool> long_enough(locals, false);
    std::vector<std::vector<double>> unit(locals);
    for (std::size_t l = 0; l < locals; ++l) {
      std::size_t on = 0;
      for (std::size_t f = 0; f < frames; ++f) on += segmentation(f, l) > 0.5F ? 1 : 0;
      if (on < config.min_active_frames) continue;
      double norm = 0.0;
      unit[l].resize(dimension);
      bool finite = true;
      for (std::size_t d = 0; d < dimension; ++d) {
        const double v = analysis.embeddings(l, d);
        finite = finite && std::isfinite(v);
        unit[l][d] = v;
        norm += v * v;
      }
      if (!finite || norm <= 0.0) continue;
      for (double& v : unit[l]) v /= std::sqrt(norm);
      active.push_back(l);
      // At the stream's start the window is mostly padding: activity is a fraction of the audio.
      long_enough[l] = static_cast<double>(on) >=
                       config.min_update_activity * static_cast<double>(std::min(frames, real));
    }
    if (active.empty()) return result;

    // Cosine distances to the centroids.
    const std::size_t known = centroids.size();
    NdArray<double> distance({active.size(), std::max<std::size_t>(known, 1)},
                             std::numeric_limits<double>::infinity());
    for (std::size_t a = 0; a < active.size(); ++a) {
      for (std::size_t s = 0; s < known; ++s) {
        double dot = 0.0, norm = 0.0;
        for (std::size_t d = 0; d < dimension; ++d) {
          dot += unit[active[a]][d] * centroids[s][d];
          norm += centroids[s][d] * centroids[s][d];
        }
        distance(a, s) = 1.0 - dot / std::sqrt(std::max(norm, 1e-30));
      }
    }
    std::vector<bool> taken(known, false);
    std::vector<bool> matched(active.size(), false);
    if (known > 0) {
      const Assignment pairs = linear_sum_assignment(distance);
      for (std::size_t k = 0; k < pairs.rows.size(); ++k) {
        const std::size_t a = pairs.rows[k];
        const std::size_t s = pairs.cols[k];
        if (distance(a, s) <= config.match_threshold) {
          result[active[a]] = s;
          matched[a] = true;
          taken[s] = true;
        }
      }
    }
    // Centroids move with the long speakers that matched (before new ones join, so that a new
    // speaker's first embedding is its centroid).
    for (std::size_t a = 0; a < active.size(); ++a) {
      if (!matched[a] || !long_enough[active[a]]) continue;
      std::vector<double>& centroid = centroids[*result[active[a]]];
      for (std::size_t d = 0; d < dimension; ++d) centroid[d] += unit[active[a]][d];
    }
    for (std::size_t a = 0; a < active.size(); ++a) {
      if (matched[a]) continue;
      const std::size_t l = active[a];
      // A short or surplus voice goes to the closest speaker not already in this window.
      std::optional<std::size_t> best;
      for (std::size_t s = 0; s < known; ++s) {
        if (taken[s]) continue;
        if (!best || distance(a, s) < distance(a, *best)) best = s;
      }
      // A short voice with no such speaker founds one (as diart's first window does): else
      // sparse speech, never 'long' in any window, would be dropped from the output entirely.
      if ((long_enough[l] || !best) && centroids.size() < config.max_speakers) {
        result[l] = centroids.size();
        centroids.push_back(unit[l]);
        open_turn.emplace_back();
        label.emplace_back();
        continue;
      }
      if (best) {
        result[l] = *best;
        taken[*best] = true;
      }
    }
    return result;
  }

  void aggregate(const NdArray<float>& segmentation,
                 const std::vector<std::optional<std::size_t>>& speakers) {
    const std::int64_t window_start = processed - static_cast<std::int64_t>(window_samples);
    const std::int64_t offset = rounded_division(window_start, kFrameStepSamples);
    const std::int64_t frames = static_cast<std::int64_t>(window_frames);
    for (std::int64_t j = 0; j < frames; ++j) {
      const std::int64_t g = offset + j;
      if (g < first_open) continue;
      const auto index = static_cast<std::size_t>(g - first_open);
      while (open.size() <= index) open.emplace_back();
      FrameSum& frame = open[index];
      if (frame.sum.size() < centroids.size()) frame.sum.resize(centroids.size(), 0.0F);
      frame.windows += 1.0F;
      for (std::size_t l = 0; l < speakers.size(); ++l) {
        if (speakers[l]) frame.sum[*speakers[l]] += segmentation(static_cast<std::size_t>(j), l);
      }
    }
  }

  std::vector<bool> frame_activity(const FrameSum& frame) const {
    std::vector<bool> on(centroids.size(), false);
    if (frame.windows <= 0.0F) return on;
    for (std::size_t s = 0; s < frame.sum.size(); ++s) on[s] = frame.sum[s] / frame.windows >= 0.5F;
    return on;
  }

  // Makes final every open frame whose middle is at most `until` seconds.
  void finalize_until(double until) {
    while (!open.empty() && frame_middle(first_open) <= until) {
      finalize_front();
    }
  }

  void finalize_front() {
    const FrameSum frame = std::move(open.front());
    open.pop_front();
    const double t = frame_middle(first_open);
    ++first_open;
    const std::vector<bool> on = frame_activity(frame);
    for (std::size_t s = 0; s < centroids.size(); ++s) {
      if (on[s] && !open_turn[s]) {
        open_turn[s] = t;
        if (!label[s]) label[s] = labelled++;
        emit(event(StreamEvent::Kind::kTurnStart, frames::speaker_label(*label[s]), t, t), t);
      } else if (!on[s] && open_turn[s]) {
        close_turn(s, t);
      }
    }
    std::optional<std::size_t> loudest;
    for (std::size_t s = 0; s < centroids.size(); ++s) {
      if (on[s] && (!loudest || frame.sum[s] > frame.sum[*loudest])) loudest = s;
    }
    if (open_exclusive && (!loudest || *loudest != open_exclusive->first)) {
      exclusive_turns.push_back(
          make_turn(*label[open_exclusive->first], open_exclusive->second, t));
      open_exclusive.reset();
    }
    if (loudest && !open_exclusive) open_exclusive.emplace(*loudest, t);
  }

  // `speaker`: the reported number (label), not the centroid's index.
  static Turn make_turn(std::size_t speaker, double start, double end) {
    Turn turn;
    turn.start = start;
    turn.end = end;
    turn.speaker = frames::speaker_label(speaker);
    turn.cluster = static_cast<int>(speaker);
    turn.speaker_index = static_cast<int>(speaker);
    return turn;
  }

  void close_turn(std::size_t s, double end) {
    const double start = *open_turn[s];
    open_turn[s].reset();
    turns.push_back(make_turn(*label[s], start, end));
    emit(event(StreamEvent::Kind::kTurnEnd, frames::speaker_label(*label[s]), start, end), end);
  }

  // Every speaker's runs of activity among the frames not final yet, also a voice not named
  // yet: its update has no label (a name is given only at a final turn start, so that labels
  // never change and every label has a turn) but its candidate number.
  void provisional_events() {
    // NaN: no run under way (std::optional here trips GCC's maybe-uninitialized at -O3).
    constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
    for (std::size_t s = 0; s < centroids.size(); ++s) {
      double start = kNone;
      double last = kNone;
      auto flush = [&] {
        if (!std::isnan(start)) {
          StreamEvent update =
              event(StreamEvent::Kind::kTurnUpdate,
                    label[s] ? frames::speaker_label(*label[s]) : std::string(), start, last);
          update.candidate = s;
          emit(std::move(update), last);
        }
        start = kNone;
        last = kNone;
      };
      for (std::size_t i = 0; i < open.size(); ++i) {
        const FrameSum& frame = open[i];
        const bool on =
            frame.windows > 0.0F && s < frame.sum.size() && frame.sum[s] / frame.windows >= 0.5F;
        if (on) {
          const double t = frame_middle(first_open + static_cast<std::int64_t>(i));
          if (std::isnan(start)) start = t;
          last = t;
        } else {
          flush();
        }
      }
      flush();
    }
  }

  pipeline::DiarizationResult finish(const std::string& uri) {
    if (finished) fail("stream finish() called twice");
    if (!closed) {
      closed = true;
      if (resampler) {
        resampled.clear();
        resampler->flush(resampled);
        accept(resampled, Clock::now());
      }
    }
    // Steps a failed push() left, then the last partial one (zero padded).
    run_due_steps({});
    if (!pending.empty()) {
      run_step(pending);
      pending.clear();
    }
    finished = true;
    const double duration = static_cast<double>(received) / kModelRate;
    // The audio has ended: what every window said about the last frames is all there will be.
    finalize_until(duration);
    for (std::size_t s = 0; s < centroids.size(); ++s) {
      if (open_turn[s]) close_turn(s, std::max(*open_turn[s], duration));
    }
    if (open_exclusive) {
      exclusive_turns.push_back(make_turn(*label[open_exclusive->first], open_exclusive->second,
                                          std::max(open_exclusive->second, duration)));
      open_exclusive.reset();
    }
    open.clear();

    pipeline::DiarizationResult result;
    result.uri = uri;
    result.duration_seconds = duration;
    // The named speakers only, in the order of their labels.
    result.speaker_count = labelled;
    result.speaker_embeddings = NdArray<float>({labelled, dimension});
    for (std::size_t s = 0; s < centroids.size(); ++s) {
      if (!label[s]) continue;
      double norm = 0.0;
      for (double v : centroids[s]) norm += v * v;
      norm = std::sqrt(std::max(norm, 1e-30));
      for (std::size_t d = 0; d < dimension; ++d) {
        result.speaker_embeddings(*label[s], d) = static_cast<float>(centroids[s][d] / norm);
      }
    }
    auto by_time = [](const Turn& a, const Turn& b) {
      return std::tie(a.start, a.end, a.speaker_index) < std::tie(b.start, b.end, b.speaker_index);
    };
    std::sort(turns.begin(), turns.end(), by_time);
    std::sort(exclusive_turns.begin(), exclusive_turns.end(), by_time);
    result.turns = turns;
    result.exclusive_turns = exclusive_turns;
    if (config.final_recluster) recluster(result);
    return result;
  }

  // The batch pipeline's diarization of the whole stream, under the live names.
  void recluster(pipeline::DiarizationResult& result) {
    audio_file.close();
    if (!audio_file) fail("cannot write the stream's temporary audio file (disk full?)");
    const MappedSamples audio((*audio_folder) / "audio.f32", static_cast<std::size_t>(received));
    pipeline::DiarizationResult batch;
    {
      const std::lock_guard lock(model.batch_mutex());
      NoProgress progress;
      batch = model.batch_diarizer()->diarize(
          audio.samples(), result.uri, progress, {},
          [&audio](std::size_t, std::size_t sample) { audio.release_before(sample); });
    }
    const std::string uri = result.uri;
    result = under_live_names(result.turns, std::move(batch));
    result.uri = uri;
  }

  std::size_t turn_bytes() const {
    return (turns.capacity() + exclusive_turns.capacity()) * sizeof(Turn);
  }

  std::size_t bytes() const {
    std::size_t total =
        (window.capacity() + dropped.capacity() + pending.capacity() + resampled.capacity()) *
        sizeof(float);
    for (const FrameSum& f : open) total += sizeof(FrameSum) + f.sum.capacity() * sizeof(float);
    for (const auto& c : centroids) total += c.capacity() * sizeof(double);
    total += open_turn.capacity() * sizeof(std::optional<double>);
    total += label.capacity() * sizeof(std::optional<std::size_t>);
    total += turn_bytes();
    total += events.capacity() * sizeof(StreamEvent);
    total += arrivals.size() * sizeof(std::pair<std::int64_t, Clock::time_point>);
    if (model_state) total += model_state->bytes();
    return total;
  }
};

StreamDiarizer::StreamDiarizer(const StreamModels& models, StreamConfig config) : config_(config) {
  config_.validate();
  impl_ = std::make_unique<Impl>(models.model(), config_);
}

StreamDiarizer::~StreamDiarizer() = default;

StreamEmbedding StreamDiarizer::embedding() const {
  return impl_->model_state ? StreamEmbedding::kRolling : StreamEmbedding::kWindow;
}

void StreamDiarizer::push(std::span<const float> samples,
                          std::optional<StreamClock::time_point> arrival) {
  if (impl_->closed) fail("stream: push() after finish()");
  const Clock::time_point arrived = arrival.value_or(Clock::now());
  impl_->pushed += samples.size();
  if (impl_->resampler) {
    impl_->resampled.clear();
    impl_->resampler->process(samples, impl_->resampled);
    impl_->accept(impl_->resampled, arrived);
  } else {
    impl_->accept(samples, arrived);
  }
}

void StreamDiarizer::push_interleaved(std::span<const float> samples, int channels,
                                      std::optional<StreamClock::time_point> arrival) {
  if (channels < 1) fail("stream: channels must be at least 1 (got {})", channels);
  if (channels == 1) return push(samples, arrival);
  const auto c = static_cast<std::size_t>(channels);
  if (samples.size() % c != 0) {
    fail("stream: {} interleaved samples are not whole frames of {} channels", samples.size(), c);
  }
  std::vector<float> mono(samples.size() / c);
  for (std::size_t i = 0; i < mono.size(); ++i) {
    float sum = 0.0F;
    for (std::size_t k = 0; k < c; ++k) sum += samples[i * c + k];
    mono[i] = sum / static_cast<float>(c);
  }
  push(mono, arrival);
}

void StreamDiarizer::push_int16(std::span<const std::int16_t> samples, int channels,
                                std::optional<StreamClock::time_point> arrival) {
  std::vector<float> converted(samples.size());
  for (std::size_t i = 0; i < samples.size(); ++i) {
    converted[i] = static_cast<float>(samples[i]) / 32768.0F;
  }
  push_interleaved(converted, channels, arrival);
}

std::vector<StreamEvent> StreamDiarizer::take_events() { return std::exchange(impl_->events, {}); }

void StreamDiarizer::return_events(std::vector<StreamEvent> events) {
  events.insert(events.end(), std::make_move_iterator(impl_->events.begin()),
                std::make_move_iterator(impl_->events.end()));
  impl_->events = std::move(events);
}

void StreamDiarizer::set_event_callback(std::function<void(const StreamEvent&)> callback) {
  impl_->callback = std::move(callback);
}

pipeline::DiarizationResult StreamDiarizer::finish(const std::string& uri) {
  return impl_->finish(uri);
}

const StageTimes& StreamDiarizer::stage_times() const { return impl_->stage_times; }

StreamState StreamDiarizer::state() const {
  StreamState s;
  s.buffered_samples = impl_->window.size() + impl_->pending.size();
  s.buffered_frames = impl_->open.size();
  s.speakers = impl_->centroids.size();
  s.pending_events = impl_->events.size();
  s.finished_turns = impl_->turns.size() + impl_->exclusive_turns.size();
  s.bytes = impl_->bytes();
  s.working_bytes = s.bytes - impl_->turn_bytes();
  s.steps = impl_->steps;
  return s;
}

double StreamDiarizer::audio_seconds() const {
  return static_cast<double>(impl_->pushed) / config_.sample_rate;
}

}  // namespace parley::stream
