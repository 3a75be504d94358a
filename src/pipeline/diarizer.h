#pragma once
// The whole community-1 pipeline in order: chunking, segmentation, powerset decoding, speaker
// counting, embeddings, clustering, reconstruction, turns. Each stage lives in its own file;
// this one only sequences them, times them and reports progress. What a save directory keeps
// (for `parley recluster`) is written by pipeline/intermediates_io.h.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cluster/clustering.h"
#include "core/ndarray.h"
#include "core/progress.h"
#include "core/stage_timer.h"
#include "frames/output.h"
#include "frames/sliding_window.h"
#include "pipeline/network_placement.h"
#include "runtime/onnx_session.h"
#include "runtime/session_share.h"
#include "stages/shared_trunk.h"

namespace parley::pipeline {

// Where the three models of the pipeline are.
struct DiarizationModels {
  std::filesystem::path segmentation;  // segmentation-3.0 (.onnx)
  std::filesystem::path embedding;     // WeSpeaker ResNet34-LM or its speed twin (.onnx)
  std::filesystem::path plda;          // folder with xvec_transform.npz and plda.npz
};

// The model files: each path set in `explicit_paths` as it is, the others found by
// models::ModelLocator in `models_dir`, then $PARLEY_MODELS, then the per-user cache (an error
// listing the places searched and the fetch command when one is missing).
DiarizationModels locate_models(const DiarizationModels& explicit_paths,
                                const std::optional<std::filesystem::path>& models_dir);

// Several chunks per call take less CPU per chunk than one, but every chunk in flight holds its
// activations: the batch shrinks as threads grow, so that about 8 chunks are in flight (1-2
// threads: 4 per call; 3 or more: 2), never below 2 (one per call rounds differently;
// docs/segmentation.md, "Several chunks per call on the CPU").
std::size_t automatic_segmentation_batch(int threads);
// Segmentation workers on the CPU (each a session, and its arena, with one intra-op thread):
// every thread up to 4, then a quarter of them, at least 4. The embedding trunk's intra-op
// threads keep every core busy, so more workers only hold more memory at the same speed
// (docs/corpus.md, "Memory"). Results do not depend on it.
int automatic_segmentation_workers(int threads);

// Bounds on the values that size buffers. Past them a value only holds memory, or cannot be
// allocated at all: 1,024 chunks per call is 4x the largest default (256, several engines on a
// GPU), 16 segmentation calls at once 4x the default (docs/corpus.md, "Bounds on the options").
inline constexpr std::size_t kMaxSegmentationBatch = 1024;
inline constexpr std::size_t kMaxEmbeddingBatch = 1024;
inline constexpr int kMaxSegmentationSessions = 16;
// Threads per hardware thread: more only add sessions and memory.
inline constexpr int kMaxThreadsPerHardwareThread = 4;
int max_threads();  // kMaxThreadsPerHardwareThread per hardware thread, at least 4

// Memory a chunk in flight holds on the CPU: segmentation's activations (docs/corpus.md,
// "Memory"), and in exact embedding mode the ResNet trunk's (about 31 KB per fbank frame, 1,000
// frames a chunk). plan_model_sessions refuses batches whose chunks would not fit in the
// machine's memory.
inline constexpr std::uintmax_t kCpuSegmentationBytesPerChunk = std::uintmax_t{18} << 20;
inline constexpr std::uintmax_t kCpuExactEmbeddingBytesPerChunk = std::uintmax_t{31} << 20;

// What changes a recording's turns: equal OutputSettings, models, providers and audio give the
// same output. A resumable run's settings fingerprint is made of these (corpus/run_record.h).
struct OutputSettings {
  // Seconds between the starts of consecutive 10 s chunks: 1 (pyannote), 2 for a faster mode.
  double step_seconds = 1.0;
  // On the CPU, segmentation's first (SincNet) convolution runs once per recording and the
  // overlapping chunks share it (stages/shared_first_convolution.h): a fifth less segmentation
  // arithmetic at a 1 s step, within rounding of running each chunk whole (docs/segmentation.md
  // has the agreement). false: every chunk whole, as pyannote does.
  bool share_segmentation_convolution = true;
  // Models routed to a dynamic-shape GPU provider (CUDA, ROCm) run in float16 between float32
  // inputs and outputs (graph/float16_graph.h): tensor-core speed, not exact; the agreement
  // with float32 is measured in docs/benchmarks.md. Ignored for models on the CPU.
  bool accelerator_float16 = false;
  bool embedding_exclude_overlap = true;  // community-1's embedding_exclude_overlap
  // shared (default): one trunk pass over the recording, sliced per chunk
  // (stages/shared_trunk.h): far less embedding time at a 1 s step, same diarization on the
  // golden clips (docs/embedding.md, section 8.6 has the measurements). exact: the trunk on every
  // chunk, pyannote's definition.
  stages::EmbeddingMode embedding_mode = stages::EmbeddingMode::kShared;
  // Shared mode's details (blocks, alignment, centring); its threads come from `threads`.
  stages::SharedTrunkConfig shared_trunk;
  double min_duration_off = 0.0;  // community-1's segmentation.min_duration_off
  cluster::ClusteringConfig clustering;
  cluster::SpeakerCountConstraints speakers;

  // Every field, keys sorted (nlohmann::json orders them): the same settings give the same text
  // whatever the order fields were set or added in. Fields with no effect in the chosen mode
  // (shared_trunk in exact mode) are left out, so that they do not tell equal outputs apart.
  nlohmann::json to_json() const;
  // Fails unless `recording` could be one recording's settings in a run configured with these:
  // a recording may bring its own clustering and speaker counts (they act after the networks),
  // every other field is shared by the networks that run many recordings at once and must be
  // equal. The message names the first field that differs and both values.
  void check_recording_settings(const OutputSettings& recording) const;
};

// How a run goes: threads, batches, sessions, streaming, providers and devices. Output is the
// same for any of these (to the last bit between 2 and 8 segmentation chunks per call; the
// provider's own rounding aside, which corpus/run_record.h fingerprints by provider name).
struct ExecutionSettings {
  // Worker threads for segmentation and intra-op threads for embeddings. Output is identical
  // for any value.
  int threads = 1;
  // Chunks per segmentation call on the CPU (stages/segmentation.h); 0: automatic,
  // automatic_segmentation_batch(threads). Batches of 2 to 8 give the same bits (a test pins
  // it); one chunk per call rounds differently.
  std::size_t segmentation_batch_size = 0;
  // Chunks per embedding trunk call.
  std::size_t embedding_batch_size = 32;
  // Segmentation calls feeding an accelerator at once (stages/segmentation.h), each on its
  // own stream, all through one session (runtime/session_share.h); one at a time leaves a GPU
  // mostly idle (docs/providers.md, "In the pipeline"). Routed (`placement` set), fewer when they
  // would not fit in the free device memory, and one on a static-shape provider.
  int segmentation_accelerator_sessions = 4;
  // Embed chunks while later ones are still being segmented (a bounded queue between the two
  // stages). Results are identical either way.
  bool streaming = true;
  // The embedding network's graph-pooled passes (one input shape for a run) replay a captured
  // graph (CUDA graphs, EmbeddingConfig::capture_pooled_graph) instead of launching each kernel:
  // a session per model set instead of one per GPU. Refused where the embedding network runs on
  // a provider that cannot replay one (the CPU). docs/benchmarks.md has its figures.
  bool embedding_graph_capture = false;
  // Execution providers, used as given when `placement` is unset (programs that choose
  // themselves, such as pipeline_bench). An accelerator gets the segmentation model rewritten
  // (graph/accelerator_rewrite.h) and `segmentation_batch_size` chunks per call.
  runtime::ProviderId embedding_provider = runtime::ProviderId::kCpu;
  runtime::ProviderOptions embedding_provider_options;
  runtime::ProviderId segmentation_provider = runtime::ProviderId::kCpu;
  runtime::ProviderOptions segmentation_provider_options;
  // When set (the CLI sets it), the Diarizer routes each model itself from the user's provider
  // flags (pipeline/network_placement.h) and the four fields above are ignored.
  std::optional<ProviderPlacement> placement;

  // Every field, keys sorted (for logs and layout reports; not part of any fingerprint).
  nlohmann::json to_json() const;
};

// The whole configuration of a Diarizer: what the output is, and how the run goes. Fields are
// reached directly (config.step_seconds, config.threads); output() and execution() give each
// half whole.
struct DiarizationConfig : OutputSettings, ExecutionSettings {
  const OutputSettings& output() const { return *this; }
  OutputSettings& output() { return *this; }
  const ExecutionSettings& execution() const { return *this; }
  ExecutionSettings& execution() { return *this; }

  void validate() const;
  std::string to_string() const;
};

// Everything after the models that `--save-intermediates` keeps (goldens' layout) and
// `parley recluster` reads back.
struct DiarizationIntermediates {
  double duration_seconds = 0.0;
  frames::SlidingWindow chunks;
  NdArray<float> segmentations;  // [chunks, 589, 3] binarized local activations
  NdArray<float> embeddings;     // [chunks, 3, D] raw embeddings
};

struct DiarizationResult {
  std::string uri;
  double duration_seconds = 0.0;
  std::vector<frames::Turn> turns;            // overlapping speech turns, labelled SPEAKER_00...
  std::vector<frames::Turn> exclusive_turns;  // at most one speaker at a time (for transcripts)
  NdArray<float> speaker_embeddings;          // [speakers, D], row i is SPEAKER_<i>'s centroid
  std::size_t speaker_count = 0;
  StageTimes stage_times;
};

// Told, as embedding moves through recording `recording`, that the samples before `sample` will
// not be read again: a caller that holds long recordings in mapped files hands those pages back.
using SamplesPassed = std::function<void(std::size_t recording, std::size_t sample)>;

// Called before samples of recording `recording` are read: returns once those before `end` hold
// their values, for a recording still being decoded (audio::DecodedAudio::wait_for). It may
// throw (a decode that failed) to stop the run. Several threads may call it at once.
using SamplesNeeded = std::function<void(std::size_t recording, std::size_t end)>;

// Embeddings [count, speakers, D] of chunks [first_chunk, first_chunk + count) of one recording
// from their binarized segmentations [count, frames, speakers], computed by a caller of
// segment_and_embed instead of the configured embedding mode (the live diarizer's rolling trunk).
using ChunkRangeEmbedder =
    std::function<NdArray<float>(std::span<const float> samples, const frames::ChunkPlan& plan,
                                 std::size_t first_chunk, const NdArray<float>& segmentations)>;

class Diarizer {
 public:
  // `shared_sessions`: where the models' accelerator sessions come from, shared with the other
  // Diarizers given the same share (engines on one GPU: runtime/session_share.h); null: a share
  // of its own.
  Diarizer(DiarizationModels models, DiarizationConfig config,
           std::shared_ptr<runtime::SessionShare> shared_sessions = nullptr);
  ~Diarizer();
  Diarizer(const Diarizer&) = delete;
  Diarizer& operator=(const Diarizer&) = delete;

  const DiarizationConfig& config() const { return config_; }
  // Segmentation chunks its accelerator runs at once; 0 when segmentation is on the CPU.
  std::size_t segmentation_chunks_in_flight() const;

  // Diarizes 16 kHz mono samples. When `save_directory` is set, every stage's arrays are
  // written there (pipeline/intermediates_io.h). With `needed`, the samples may still be
  // arriving: `samples` has the recording's final length, and no sample is read before `needed`
  // says it is there; the result is the same as with all of them there from the start.
  // `speakers`, when set, replaces the configured speaker-count constraints for this recording.
  // Progress goes through the networks' stage, then "clustering" (one unit).
  DiarizationResult diarize(std::span<const float> samples, const std::string& uri,
                            ProgressSink& progress,
                            const std::optional<std::filesystem::path>& save_directory = {},
                            const SamplesPassed& passed = {}, const SamplesNeeded& needed = {},
                            const std::optional<cluster::SpeakerCountConstraints>& speakers = {});

  // The model stage of several recordings (16 kHz mono each) in one stream of model calls, fed
  // to this Diarizer's networks through a SegmentEmbedScheduler
  // (pipeline/segment_embed_scheduler.h, which says when the result equals diarizing each
  // alone). `times[i]` receives recording i's share of
  // segmentation (by chunks) and its own embedding time. One call at a time per Diarizer.
  // `needed` as for diarize(). `segmentation_rows` > 0: segmentation calls of that many rows
  // instead of the whole batch or the accelerator's multiple (SegmentationModel::plan_calls), for
  // callers whose recordings are always one chunk. `embed`, when set, computes the embeddings
  // instead of the configured mode (checked as the pipeline checks its own: finite for speech).
  std::vector<DiarizationIntermediates> segment_and_embed(
      std::span<const std::span<const float>> recordings, std::vector<StageTimes>& times,
      ProgressSink& progress, const SamplesPassed& passed = {}, const SamplesNeeded& needed = {},
      std::size_t segmentation_rows = 0, const ChunkRangeEmbedder& embed = {});
  // The embedding stage alone, on masks made elsewhere: the raw embeddings of one recording
  // from binarized segmentations [chunks, frames, speakers] of that recording at this
  // Diarizer's step (another run's, as read_model_intermediates reads them back), nothing
  // segmented here. Two providers fed the same masks differ only by their embedding arithmetic:
  // the GPU-against-CPU embedding gate (bench/embedding_gate.cpp). The chunk ranges are those
  // of segment_and_embed, so on the provider that made the masks the embeddings are diarize()'s
  // to the bit. Fails when the masks do not have the recording's chunks and the model's frames.
  DiarizationIntermediates embed_given_segmentations(std::span<const float> samples,
                                                     NdArray<float> segmentations);
  // How the embedding time of the last recording embedded in shared mode divides ("embedding
  // features", "embedding trunk", "embedding pooling"); empty in exact mode. The live
  // diarizer's per-stage figures (stream_bench).
  const StageTimes& shared_trunk_times() const;
  // The embedding network, for callers that run it themselves (the live rolling trunk); its
  // calls must not overlap segment_and_embed's.
  stages::EmbeddingExtractor& embedding_extractor();

  // Clustering, reconstruction and turns from `intermediates` (the part after the networks).
  // Reads the models only, so several threads may call it at once, also while
  // segment_and_embed runs on another.
  // `speakers`, when set, replaces the configured speaker-count constraints for this recording.
  DiarizationResult cluster(
      const DiarizationIntermediates& intermediates, const std::string& uri, StageTimes& times,
      const std::optional<cluster::SpeakerCountConstraints>& speakers = {}) const;
  // With the recording's own output settings: their clustering and speaker counts replace the
  // configured ones; the rest must equal the configuration (OutputSettings::
  // check_recording_settings), as the networks already ran with it.
  DiarizationResult cluster(const DiarizationIntermediates& intermediates, const std::string& uri,
                            StageTimes& times, const OutputSettings& recording) const;

 private:
  struct Models;
  // Shared mode pooling inside the graph: embedding ranges are whole passes.
  bool embeds_in_graph_passes() const;
  // Chunks per embedding call: a whole trunk pass when pooling in the graph, else the batch.
  std::size_t embedding_range_chunks() const;
  NdArray<float> embed_chunk_range_unchecked(std::span<const float> samples,
                                             const frames::ChunkPlan& plan, std::size_t first_chunk,
                                             const NdArray<float>& range_segmentations);
  // Embeddings [count, speakers, D] of chunks [first_chunk, first_chunk + count) of one
  // recording from their binarized segmentations [count, frames, speakers]. Called with
  // ascending, contiguous ranges per recording, one recording after the other, never
  // concurrently.
  // Fails, naming the model, when a speaking speaker's embedding is NaN or infinite.
  // `embed`, when set, computes them instead of the configured mode.
  NdArray<float> embed_chunk_range(std::span<const float> samples, const frames::ChunkPlan& plan,
                                   std::size_t first_chunk,
                                   const NdArray<float>& range_segmentations,
                                   const ChunkRangeEmbedder& embed = {});

  DiarizationModels model_paths_;
  DiarizationConfig config_;
  std::unique_ptr<Models> models_;
};

// Runs clustering, reconstruction and turns from saved segmentations and embeddings: the part
// of the pipeline after the neural networks. `plda` may be null for AHC.
DiarizationResult diarize_from_embeddings(
    const DiarizationIntermediates& intermediates, const DiarizationConfig& config,
    const cluster::Plda* plda, const std::string& uri, StageTimes& times,
    const std::optional<std::filesystem::path>& save_directory = {});

}  // namespace parley::pipeline
