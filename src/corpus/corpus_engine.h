#pragma once
// Many recordings through one process at the throughput of one long recording. Three stages
// joined by bounded queues, each with its own threads:
//   decode (several recordings at once, off the networks' path)
//     -> networks (one pipeline::Diarizer per engine: per GPU, or several on one device; an
//        engine gathers waiting recordings into one stream of model calls, so a short call's
//        chunks share segmentation batches with the next call's)
//     -> clustering and reconstruction (its own threads, while the networks run on).
// A recording's result equals diarizing it alone (pipeline::Diarizer::segment_and_embed says
// when that is bit for bit); results come out per recording as each is done, in completion
// order. A recording that fails (undecodable audio, a model error on it) fails alone.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "audio/decoded_audio.h"
#include "cluster/speaker_count_constraints.h"
#include "pipeline/diarizer.h"
#include "pipeline/option_table.h"
#include "runtime/device_memory.h"

namespace parley::corpus {

struct CorpusRecording {
  std::filesystem::path audio;  // any format the audio module decodes
  std::string uri;              // names the recording in its result
  // 16 kHz mono samples already in memory; when set, `audio` is not read.
  std::shared_ptr<const std::vector<float>> samples;
  // Replaces the engines' speaker-count constraints for this recording.
  std::optional<cluster::SpeakerCountConstraints> speakers;
  // This recording's output settings, when a caller has them whole (the server's jobs): their
  // clustering and speaker counts replace the engines' (and `speakers`); the other fields must
  // equal the engines' (pipeline::OutputSettings::check_recording_settings), else the recording
  // fails with that message.
  std::optional<pipeline::OutputSettings> output{};
  // The length `audio`'s header states (0: it does not say), when the face opened it already
  // (corpus::probe_recordings); unset: corpus::CorpusRun::add opens it to check it.
  std::optional<double> duration_seconds{};
};

struct CorpusConfig {
  // Recordings decoded at once. Decoding is single-threaded per file, so two keep one engine fed
  // on a 2-core machine; more pay off with several engines.
  int decode_threads = pipeline::kDefaultCorpusJobs;
  // Recordings clustered at once (clustering is single-threaded per recording).
  int clustering_threads = 1;
  // Decoded recordings waiting for the engines, per engine. Each waits as 16 kHz float samples
  // (230 MiB an hour in memory; past `spill_samples` in a mapped file), so this bounds the
  // memory that runs ahead of the networks. An engine groups what waits when it takes work, so
  // a longer queue lets several engines on a GPU group more (docs/history.md has the runs).
  std::size_t decoded_per_engine = 2;
  // Recordings longer than this many samples are decoded into a mapped temporary file whose
  // pages are handed back as the networks move through it (audio/decoded_audio.h), so memory
  // stays bounded whatever a recording's length; 0: every recording in memory.
  std::size_t spill_samples = audio::DecodedAudio::kDefaultSpillSamples;
  // Chunks an engine gathers from the recordings waiting for it into one stream of model calls
  // (at a 1 s step, 1,024 chunks are about 17 minutes of audio). A recording longer than this
  // goes alone.
  std::size_t group_chunks = 1024;
  // Chunks an engine waits for before its networks start: it takes recordings as they are
  // decoded until its group holds this many (at most group_chunks) or no more come, then adds
  // those already waiting. Unset: the segmentation chunks its accelerator runs at once
  // (pipeline::Diarizer::segmentation_chunks_in_flight; none on the CPU, whose batches one
  // recording fills), so that batches are full whatever the step: at a 2 s step a 3-minute call
  // makes half the chunks of a 1 s step, and alone it would leave its calls half padding. 0:
  // only those already waiting join.
  std::optional<std::size_t> fill_chunks;
  // When the run's stop flag is set, recordings in the networks are abandoned at their next step
  // (and not reported) instead of finished: for callers that stop because nobody waits for the
  // results any more (a library batch being freed).
  bool abandon_on_stop = false;
  // Where run() writes a trace of its stages when it ends: a Chrome trace-event JSON file
  // (Perfetto, chrome://tracing; tools/trace_summary.py sums it per engine and device) with each
  // recording's decode, its wait for an engine, every model call, embedding, clustering,
  // reconstruction and writing, per thread (core/trace.h). Empty: nothing is recorded. Results
  // are the same either way.
  std::filesystem::path trace_file;

  // Fails past kMaxStageThreads threads per stage, and when the recordings decoded at once
  // (up to spill_samples each in memory) would not fit in the machine's memory.
  void validate() const;
  std::string to_string() const;
};

// Threads per stage past which they only contend: a corpus run is bounded by its engines.
inline constexpr int kMaxStageThreads = pipeline::kMaxCorpusJobs;

// What happened to one recording.
struct RecordingOutcome {
  std::size_t index = 0;  // into the inputs of run(), or the source's order
  std::optional<pipeline::DiarizationResult> result;  // unset when it failed
  std::string error;                                  // why it failed; empty when it did not
  double decode_seconds = 0.0;
  double wall_seconds = 0.0;   // from the start of its decoding to its result
  std::size_t engine = 0;      // which engine ran its networks
  std::size_t group_size = 1;  // recordings that shared its model calls

  bool ok() const { return result.has_value(); }
};

// Engines per GPU when the caller does not choose: one engine leaves the GPU idle while its
// recordings are decoded, their features computed and their speakers clustered on the CPU, so
// several engines take turns on it. Each of several engines runs the segmentation layout below,
// and holds up to about kDeviceBytesPerEngine of device memory at its peak (docs/benchmarks.md,
// "A corpus of many files"). Three where that much is free for each, fewer where less is, one when
// the free memory is unknown.
inline constexpr std::uintmax_t kDeviceBytesPerEngine = std::uintmax_t{16} << 30;
inline constexpr int kMaxAutomaticEnginesPerDevice = 3;
int automatic_engines_per_device(const std::optional<runtime::DeviceMemory>& memory);

// The segmentation layout of several engines sharing one GPU: two calls of 256 chunks at once
// per engine instead of one engine's four of 128: as fast as four of 256 in far less device
// memory (docs/benchmarks.md, "A corpus of many files"). The engines, not the calls in flight,
// keep the GPU busy. The engines of a device run one session
// per model (runtime/session_share.h).
inline constexpr std::size_t kSeveralEnginesSegmentationBatch = 256;
inline constexpr int kSeveralEnginesSegmentationSessions = 2;
void use_several_engines_layout(pipeline::DiarizationConfig& config);

// The most engines per device. Each holds a model set and its sessions (kHostBytesPerEngine of
// memory on the CPU, up to kDeviceBytesPerEngine of device memory at its peak on a GPU, where a
// few already keep it busy; docs/corpus.md, "Bounds on the options"). On the CPU the engines share
// the cores, so one per hardware thread at most.
inline constexpr int kMaxEnginesPerDevice = 8;
inline constexpr std::uintmax_t kHostBytesPerEngine = std::uintmax_t{80} << 20;
int max_engines_per_device(bool on_accelerator);
// Fails, saying the bound and why, for more engines per device than max_engines_per_device
// (or, with `devices` of them, than the machine's memory holds).
void check_engines_per_device(int engines_per_device, bool on_accelerator, std::size_t devices = 1);

// The configuration of `engines_per_device` engines on each device of `devices`: `config` with
// the device number set as both models' provider option device_id. No devices: one engine per
// entry of engines_per_device on whatever `config` chose (the CPU or the default device).
// Fails past kMaxEnginesPerDevice.
std::vector<pipeline::DiarizationConfig> engine_configs(const pipeline::DiarizationConfig& config,
                                                        const std::vector<int>& devices,
                                                        int engines_per_device);

class CorpusEngine {
 public:
  // Loads one model set per entry of `engines` (fails as pipeline::Diarizer does).
  CorpusEngine(const pipeline::DiarizationModels& models,
               const std::vector<pipeline::DiarizationConfig>& engines, CorpusConfig config);
  ~CorpusEngine();
  CorpusEngine(const CorpusEngine&) = delete;
  CorpusEngine& operator=(const CorpusEngine&) = delete;

  std::size_t engine_count() const { return diarizers_.size(); }
  const CorpusConfig& config() const { return config_; }

  // Called once per recording as it completes, one call at a time, from the engine's threads.
  // An exception thrown from it stops the run and run() rethrows it.
  using ResultCallback = std::function<void(RecordingOutcome)>;
  // The next recording to diarize, waiting for one if need be; nullopt once there are no more.
  // Called from the decoding threads, one call at a time.
  using RecordingSource = std::function<std::optional<CorpusRecording>()>;
  // Where a recording is: "decoding", "networks", "clustering" (then its result comes). Called
  // from the engine's threads, possibly at once for different recordings; must not throw.
  using StageCallback = std::function<void(std::size_t index, std::string_view stage)>;

  // Diarizes every recording `next` gives and returns once all are reported. When `stop`
  // becomes true no new recording starts; those already in the networks finish and are
  // reported (unless config().abandon_on_stop), those decoded but not started are not. One run
  // at a time per engine.
  void run(const RecordingSource& next, const ResultCallback& on_result,
           const StageCallback& on_stage = {}, const std::atomic<bool>* stop = nullptr);
  // The same over a list.
  void run(std::span<const CorpusRecording> inputs, const ResultCallback& on_result,
           const std::atomic<bool>* stop = nullptr);

 private:
  struct Run;
  CorpusConfig config_;
  std::vector<std::unique_ptr<pipeline::Diarizer>> diarizers_;
};

}  // namespace parley::corpus
