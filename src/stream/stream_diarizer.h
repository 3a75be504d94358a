#pragma once
// Live (online) diarization: audio pushed in chunks of any size, speaker turns out within a
// configurable latency, labels that never change once final. The design follows diart
// (Coria et al., "Overlap-aware low-latency online speaker diarization based on end-to-end local
// segmentation"): community-1's segmentation on a rolling 10 s window moved by a step,
// embeddings of the window's active local speakers, incremental clustering against the centroids
// of the speakers seen so far, and per-frame scores aggregated over the overlapping windows.
// docs/live.md is the manual.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/ndarray.h"
#include "core/stage_timer.h"
#include "pipeline/diarizer.h"

namespace parley::stream {

// The clock of arrival times and event latencies.
using StreamClock = std::chrono::steady_clock;

// How a stream computes its windows' embeddings (docs/embedding.md §8.9).
enum class StreamEmbedding {
  // rolling where it applies (the pipeline's embedding mode is shared, the step is a whole
  // number of 10 ms fbank frames, the trunk's receptive field is known and local, sessions take
  // any shape); window otherwise.
  kAuto,
  // Every window's embeddings computed from the whole window, as the batch pipeline computes a
  // one-chunk recording: the reference, and exact mode's definition.
  kWindow,
  // The stream keeps the trunk's frames of the audio it has seen (stages/rolling_trunk.h) and
  // runs the trunk only over each step's new frames and their receptive field: about a quarter
  // of the trunk's work at a 0.5 s step, within rounding of shared mode's frames.
  kRolling,
};
const char* stream_embedding_name(StreamEmbedding embedding);  // "auto", "window", "rolling"

// What StreamEmbedding::kAuto's choice depends on.
struct RollingFacts {
  bool supported = false;         // the step and the trunk allow it (rolling_trunk_supported)
  bool shared_mode = false;       // the pipeline's embedding mode is shared (rolling's definition)
  bool local_field = false;       // the graph tells the trunk's receptive field, and it is local
  bool embedding_on_cpu = false;  // the embedding network runs on the CPU
};
// Whether auto rolls. Not on an accelerator: a pass's length follows the step's phase against
// the trunk's stride (4 lengths at 0.5 s, alternating every step), and a GPU provider rebuilds
// its convolutions' state at every change of shape (on CUDA with cuDNN's exhaustive search
// 0.40 s a step, heuristic 0.08 s, where the whole window's fixed-shape pass takes 0.05 s:
// docs/live.md); a static-shape provider would compile each length.
bool rolling_by_default(const RollingFacts& facts);
// Fails naming the choices for anything else.
StreamEmbedding parse_stream_embedding(const std::string& name);

// What a stream's output depends on (and the rate of the pushed samples).
struct StreamConfig {
  // Rate of the samples given to push(); resampled inside to the models' 16 kHz.
  double sample_rate = 16000.0;
  // Seconds the rolling window moves between two segmentation runs: the unit of work. Whole
  // multiples of the segmentation frame (270 samples at 16 kHz) are not needed; each window's
  // frames land on the stream's frame grid by rounding, as pyannote aggregates.
  double step_seconds = 0.5;
  // A frame's label is final once this much audio has been processed past it (0.5 to 5 s, at
  // least one step): the windows ending later only ever refine frames that are still provisional.
  double latency_seconds = 2.0;
  // Most speakers a stream creates; past it, a new voice is given the closest known speaker.
  std::size_t max_speakers = 20;
  // Cosine distance (0 to 2) under which a window's local speaker may be matched to a known
  // speaker's centroid (diart's delta_new); none under it: a new speaker.
  double match_threshold = 0.7;
  // Fraction of a window's frames a local speaker must be active in for its embedding to update
  // a centroid or found a new speaker (diart's rho_update); shorter speakers are only matched.
  // Near the stream's start it is a fraction of the audio in the window, not of its padding.
  double min_update_activity = 0.3;
  // Frames a local speaker must be active in to take part in a window at all (diart's tau_active
  // over the binarized segmentation).
  std::size_t min_active_frames = 5;
  // Emit turn_update events for the not yet final frames after every step.
  bool provisional = false;
  // At finish(), diarize the whole stream with the batch pipeline (the audio waits in a
  // temporary file under $TMPDIR meanwhile, not in memory, and is read back mapped, a window at a
  // time) and name its speakers after the live ones (under_live_names), so the final result is
  // batch output under the live names.
  bool final_recluster = false;
  // How windows are embedded; rolling is refused (at the stream's construction) where it
  // cannot run: a step off the 10 ms grid, a trunk that mixes the whole time axis.
  StreamEmbedding embedding = StreamEmbedding::kAuto;

  void validate() const;  // fails (parley::Error) naming the field and its allowed range
  std::string to_string() const;
};

// One window's worth of model output: what the networks say about 10 s of 16 kHz audio.
struct WindowAnalysis {
  NdArray<float> segmentation;  // [frames, local speakers], binarized activations (0 or 1)
  NdArray<float> embeddings;    // [local speakers, D]; rows of inactive speakers may be NaN
};

// What a model keeps for one stream between its windows (WindowModel::open_stream).
class WindowModelState {
 public:
  virtual ~WindowModelState() = default;
  virtual std::size_t bytes() const = 0;  // heap bytes held: constant over the stream
};

// The networks behind a stream, replaceable in tests by a fake of the same shape.
class WindowModel {
 public:
  virtual ~WindowModel() = default;
  // State for one stream moving its window by `step_samples` 16 kHz samples, for config's
  // embedding choice; null: every window is analysed alone (analyze_timed). Fails when the
  // config asks for what the model cannot do.
  virtual std::unique_ptr<WindowModelState> open_stream(const StreamConfig& config,
                                                        std::size_t step_samples) const {
    (void)config;
    (void)step_samples;
    return nullptr;
  }
  // analyze_timed for a stream's next window (the previous one moved by one step) with the
  // state open_stream gave it; with none, analyze_timed.
  virtual WindowAnalysis analyze_step(WindowModelState* state, std::span<const float> window,
                                      StageTimes& times) const {
    (void)state;
    return analyze_timed(window, times);
  }
  // Segmentation and embeddings of one window of exactly window_samples() 16 kHz samples.
  // Called from many streams' threads at once: implementations are thread safe.
  virtual WindowAnalysis analyze(std::span<const float> window) const = 0;
  // analyze(), adding its seconds to `times` by stage (models that know no stages: "model").
  virtual WindowAnalysis analyze_timed(std::span<const float> window, StageTimes& times) const {
    const ScopedStageTimer timer(times, "model");
    return analyze(window);
  }
  virtual std::size_t window_samples() const { return 160000; }  // 10 s at 16 kHz
  // Frames per window and their time axis (segmentation-3.0's 589 frames of 270 samples).
  virtual std::size_t window_frames() const { return 589; }
  // The batch pipeline for final_recluster; null when the model cannot diarize whole recordings
  // (fakes): final_recluster then fails at construction.
  virtual pipeline::Diarizer* batch_diarizer() const { return nullptr; }
  // Serializes batch_diarizer()'s calls between the streams sharing the model.
  std::mutex& batch_mutex() const { return batch_mutex_; }

 private:
  mutable std::mutex batch_mutex_;
};

// The loaded segmentation and embedding networks, created once and shared by any number of
// streams at once (thread safe: a server holds one). Loading, provider choice and placement are
// the pipeline's (pipeline::Diarizer).
class StreamModels {
 public:
  // Loads the models as pipeline::Diarizer does for `config` (providers, threads, embedding
  // mode); the config's step is ignored (the stream's windows are its own).
  StreamModels(pipeline::DiarizationModels models, pipeline::DiarizationConfig config);
  // Over a Diarizer loaded elsewhere (the C API's parley_diarizer), which must outlive this and
  // must not diarize on another thread while streams run on it.
  explicit StreamModels(pipeline::Diarizer& diarizer);
  // Any other model, such as a test's fake networks.
  explicit StreamModels(std::unique_ptr<WindowModel> model);
  ~StreamModels();
  StreamModels(const StreamModels&) = delete;
  StreamModels& operator=(const StreamModels&) = delete;

  const WindowModel& model() const { return *model_; }

 private:
  std::unique_ptr<WindowModel> model_;
};

// One event of a stream, in the stream's own time (seconds from its first sample).
struct StreamEvent {
  enum class Kind {
    kTurnStart,   // a speaker's turn began at `start` (final)
    kTurnUpdate,  // provisional: `speaker` seems active from `start` to `end`, may still change
    kTurnEnd,     // a speaker's turn [start, end] is over (final)
  };
  Kind kind = Kind::kTurnStart;
  // SPEAKER_00, SPEAKER_01, ... stable for the whole stream. Empty in a kTurnUpdate of a voice
  // not named yet (its first turn start is not final): `candidate` tells such voices apart.
  std::string speaker;
  double start = 0.0;       // seconds
  double end = 0.0;         // seconds (kTurnEnd, kTurnUpdate; equal to start for kTurnStart)
  double audio_time = 0.0;  // seconds of audio processed when the event was made (deterministic)
  // Wall seconds from the arrival of the audio at the event's decisive time (a turn start's or
  // end's, an update's end; push()'s `arrival`) to the moment the event was made, after the
  // compute of the step that made it (not deterministic: it depends on how audio arrives).
  double latency_seconds = 0.0;
  // kTurnUpdate only: the stream's own number of the voice (0, 1, ... in the order the
  // clustering found them, never reused), the same before and after it is named; not its label.
  std::optional<std::size_t> candidate;

  // One line of JSON: {"type":"turn_start","speaker":"SPEAKER_00","start":1.234,...}; an
  // update's "speaker" is null before the voice is named, and it has "candidate".
  std::string to_json() const;
  // Everything but latency_seconds equal (what a chunking test compares).
  bool same_decision(const StreamEvent& other) const;
};
const char* kind_name(StreamEvent::Kind kind);  // "turn_start", "turn_update", "turn_end"

// What a stream holds at a moment: constant over hours (the memory test compares them).
struct StreamState {
  std::size_t buffered_samples = 0;  // audio kept for the next windows
  std::size_t buffered_frames = 0;   // frames whose label is not final yet
  std::size_t speakers = 0;          // centroids
  std::size_t pending_events = 0;    // events not yet taken
  std::size_t finished_turns = 0;    // turns kept for finish()'s result
  std::size_t bytes = 0;             // heap bytes of all of the above, finished turns included
  std::size_t working_bytes = 0;     // bytes less the finished turns: flat over any duration
  std::size_t steps = 0;             // windows analysed so far
};

// One live stream. Not thread safe itself: one thread at a time pushes, takes and finishes (many
// streams, each on its own thread, may share one StreamModels).
class StreamDiarizer {
 public:
  // `models` must outlive the diarizer. Fails on an invalid config, and on final_recluster with
  // a model that has no batch pipeline.
  StreamDiarizer(const StreamModels& models, StreamConfig config);
  ~StreamDiarizer();
  StreamDiarizer(const StreamDiarizer&) = delete;
  StreamDiarizer& operator=(const StreamDiarizer&) = delete;

  const StreamConfig& config() const { return config_; }
  // The embedding the stream uses: window or rolling (config().embedding resolved).
  StreamEmbedding embedding() const;

  // Mono samples at config().sample_rate, any count (0 too). Runs every whole step that became
  // available; events go to the callback if one is set, else wait for take_events().
  // `arrival`: when the last of these samples arrived, for the events' latencies. A caller that
  // knows it (a paced feeder: its start plus the audio so far; a capture callback's time stamp)
  // says so, because audio that waited in a backlog before push() arrived earlier than the
  // call; without it, the audio counts as arriving when push() is called.
  // The samples are taken even when the call fails: a step whose model call throws leaves the
  // stream as it was before that step, and that step and the audio after it run first at the
  // next push() (any count, 0 too) or finish(). So after an error push the next samples, never
  // the same ones again.
  void push(std::span<const float> samples, std::optional<StreamClock::time_point> arrival = {});
  // Interleaved float samples of `channels` channels, downmixed (mean) to mono.
  void push_interleaved(std::span<const float> samples, int channels,
                        std::optional<StreamClock::time_point> arrival = {});
  // Interleaved signed 16-bit samples (scaled to [-1, 1)), downmixed.
  void push_int16(std::span<const std::int16_t> samples, int channels,
                  std::optional<StreamClock::time_point> arrival = {});

  // The events made since the last call, in order.
  std::vector<StreamEvent> take_events();
  // Puts events taken but not handed on back in front of the waiting ones (a caller that takes
  // fewer than it got, such as the C API's bounded poll).
  void return_events(std::vector<StreamEvent> events);
  // Events are handed to `callback` as they are made (on push()'s and finish()'s thread)
  // instead of being kept for take_events(); an empty function goes back to keeping them.
  void set_event_callback(std::function<void(const StreamEvent&)> callback);

  // Ends the stream: the last frames become final (their events are made) and the whole
  // diarization comes back, labelled with the live names (with final_recluster, the batch
  // pipeline's turns under them), for pipeline/result_writer.h. No push() after it, even when
  // it fails; a finish() that failed in a step's model call may be called again (one that
  // failed in final_recluster's batch diarization may not).
  pipeline::DiarizationResult finish(const std::string& uri = "stream");

  StreamState state() const;
  // Seconds spent so far by stage: the model's stages (WindowModel::analyze_timed), then
  // "clustering" (local speakers to stream speakers) and "aggregation" (frames, turns, events).
  const StageTimes& stage_times() const;
  double audio_seconds() const;  // audio pushed so far (at config().sample_rate)

 private:
  struct Impl;
  StreamConfig config_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace parley::stream
