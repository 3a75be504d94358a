#include "pipeline/diarizer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string_view>
#include <thread>

#include "core/bounded_queue.h"
#include "core/error.h"
#include "core/heap.h"
#include "core/sample_rate.h"
#include "core/stage_timer.h"
#include "frames/postprocess.h"
#include "frames/powerset.h"
#include "frames/speaker_count.h"
#include "models/model_locator.h"
#include "pipeline/intermediates_io.h"
#include "stages/embedding.h"
#include "stages/segmentation.h"

namespace parley::pipeline {
namespace {

constexpr double kChunkSeconds = 10.0;

// One past the last sample of the recording that chunk `chunk` holds.
std::size_t chunk_end(const ChunkPlan& plan, std::int64_t chunk) {
  return static_cast<std::size_t>(plan.chunk_offset(chunk) + plan.valid_samples(chunk));
}

// The zero-padded last chunk can stretch a final turn up to a chunk step past the end of the
// audio (pyannote leaves it so); a turn past the end is not a place anyone spoke.
std::vector<Turn> clip_to_recording(const std::vector<Turn>& turns, double duration_seconds) {
  std::vector<Turn> clipped;
  clipped.reserve(turns.size());
  for (Turn turn : turns) {
    if (turn.start >= duration_seconds) continue;
    turn.end = std::min(turn.end, duration_seconds);
    clipped.push_back(std::move(turn));
  }
  return clipped;
}

}  // namespace

std::size_t automatic_segmentation_batch(int threads) {
  constexpr std::size_t kChunksInFlight = 8;
  return std::clamp<std::size_t>(kChunksInFlight / static_cast<std::size_t>(std::max(threads, 1)),
                                 2, 4);
}

int automatic_segmentation_workers(int threads) {
  constexpr int kFewThreads = 4;
  return threads <= kFewThreads ? std::max(threads, 1) : std::max(kFewThreads, threads / 4);
}

int max_threads() {
  return kMaxThreadsPerHardwareThread *
         static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

void DiarizationConfig::validate() const {
  if (!(step_seconds > 0.0) || step_seconds > kChunkSeconds) {
    fail("step_seconds must be in (0, {}] (got {})", kChunkSeconds, step_seconds);
  }
  if (threads < 1) fail("threads must be at least 1 (got {})", threads);
  if (threads > max_threads()) {
    fail(
        "threads must be at most {} ({} per hardware thread; got {}): more only add sessions and "
        "memory, not speed",
        max_threads(), kMaxThreadsPerHardwareThread, threads);
  }
  if (embedding_batch_size < 1) {
    fail("embedding_batch_size must be at least 1 (got {})", embedding_batch_size);
  }
  if (embedding_batch_size > kMaxEmbeddingBatch) {
    fail(
        "embedding_batch_size must be at most {} (got {}): every chunk of a call holds its "
        "activations (about 31 MiB each on the CPU), and 128 already keep a GPU busy",
        kMaxEmbeddingBatch, embedding_batch_size);
  }
  if (min_duration_off < 0.0) fail("min_duration_off must not be negative");
  if (routing && routing->accelerator_segmentation_batch_size < 1) {
    fail("accelerator_segmentation_batch_size must be at least 1");
  }
  const auto check_segmentation_batch = [](std::string_view field, std::size_t batch) {
    if (batch > kMaxSegmentationBatch) {
      fail(
          "{} must be at most {} (got {}): every chunk of a call holds its activations (about "
          "18 MiB each on the CPU), and 256 per call already keep an H100 busy",
          field, kMaxSegmentationBatch, batch);
    }
  };
  check_segmentation_batch("segmentation_batch_size", segmentation_batch_size);
  if (routing) {
    check_segmentation_batch("accelerator_segmentation_batch_size",
                             routing->accelerator_segmentation_batch_size);
  }
  if (segmentation_accelerator_sessions < 1) {
    fail("segmentation_accelerator_sessions must be at least 1 (got {})",
         segmentation_accelerator_sessions);
  }
  if (segmentation_accelerator_sessions > kMaxSegmentationSessions) {
    fail(
        "segmentation_accelerator_sessions must be at most {} (got {}): each call in flight holds "
        "its batch's activations, and 4 already keep an H100 busy",
        kMaxSegmentationSessions, segmentation_accelerator_sessions);
  }
  if (embedding_mode == EmbeddingMode::kShared) {
    shared_trunk.validate();
    // The shared map holds fbank frames every 10 ms from the recording's start.
    const double step_frames = step_seconds * 100.0;
    if (std::abs(step_frames - std::round(step_frames)) > 1e-9) {
      fail(
          "embedding_mode shared needs a step_seconds that is a multiple of 10 ms (got {}); use "
          "embedding_mode exact for this step",
          step_seconds);
    }
  }
  if (routing) routing->validate();
  clustering.validate();
  speakers.validate();
}

nlohmann::json OutputSettings::to_json() const {
  nlohmann::json json = {{"step_seconds", step_seconds},
                         {"share_segmentation_convolution", share_segmentation_convolution},
                         {"accelerator_float16", accelerator_float16},
                         {"embedding_exclude_overlap", embedding_exclude_overlap},
                         {"embedding_mode", std::string(embedding_mode_name(embedding_mode))},
                         {"min_duration_off", min_duration_off},
                         {"clustering", clustering.describe()},
                         {"speakers", speakers.describe()}};
  if (embedding_mode == EmbeddingMode::kShared) json["shared_trunk"] = shared_trunk.to_string();
  return json;
}

nlohmann::json ExecutionSettings::to_json() const {
  nlohmann::json json = {{"threads", threads},
                         {"segmentation_batch_size", segmentation_batch_size},
                         {"embedding_batch_size", embedding_batch_size},
                         {"segmentation_accelerator_sessions", segmentation_accelerator_sessions},
                         {"streaming", streaming}};
  if (routing) {
    json["provider"] = routing->choice.to_string();
    json["provider_options"] = routing->options;
    if (routing->segmentation_choice) {
      json["segmentation_provider"] = routing->segmentation_choice->to_string();
    }
    if (routing->embedding_choice) {
      json["embedding_provider"] = routing->embedding_choice->to_string();
    }
    json["accelerator_segmentation_batch_size"] = routing->accelerator_segmentation_batch_size;
  } else {
    json["segmentation_provider"] = std::string(runtime::provider_name(segmentation_provider));
    json["segmentation_provider_options"] = segmentation_provider_options;
    json["embedding_provider"] = std::string(runtime::provider_name(embedding_provider));
    json["embedding_provider_options"] = embedding_provider_options;
  }
  return json;
}

std::string DiarizationConfig::to_string() const {
  return fmt::format(
      "DiarizationConfig(step={}s, threads={}, segmentation_batch={}, "
      "segmentation_accelerator_sessions={}, embedding_batch={}, "
      "exclude_overlap={}, min_duration_off={}, clustering={}, speakers={}, "
      "embedding_provider={}, segmentation_provider={}{}, streaming={}, embedding_mode={}{}{}{})",
      step_seconds, threads,
      segmentation_batch_size > 0
          ? fmt::format("{}", segmentation_batch_size)
          : fmt::format("{} (automatic)", automatic_segmentation_batch(threads)),
      segmentation_accelerator_sessions, embedding_batch_size, embedding_exclude_overlap,
      min_duration_off, clustering.describe(), speakers.describe(),
      runtime::provider_name(embedding_provider), runtime::provider_name(segmentation_provider),
      routing ? fmt::format(", routed from provider {}", routing->choice.to_string()) : "",
      streaming, embedding_mode_name(embedding_mode),
      embedding_mode == EmbeddingMode::kShared ? ", " + shared_trunk.to_string() : "",
      accelerator_float16 ? ", accelerator_float16=true" : "",
      share_segmentation_convolution ? "" : ", share_segmentation_convolution=false");
}

struct Diarizer::Models {
  std::unique_ptr<SegmentationModel> segmentation;
  std::unique_ptr<EmbeddingExtractor> embedding;
  // Shared mode: the map of the recording being embedded (made at its first chunk range, freed
  // after its last).
  std::unique_ptr<SharedTrunk> shared_trunk;
  std::optional<cluster::Plda> plda;
};

DiarizationModels locate_models(const DiarizationModels& explicit_paths,
                                const std::optional<std::filesystem::path>& models_dir) {
  const models::ModelLocator locator(models::Registry::builtin(), models_dir);
  DiarizationModels paths = explicit_paths;
  if (paths.segmentation.empty()) {
    paths.segmentation = locator.locate(models::Role::kSegmentation).path;
  }
  if (paths.embedding.empty()) paths.embedding = locator.locate(models::Role::kEmbedding).path;
  if (paths.plda.empty()) paths.plda = locator.locate(models::Role::kPlda).path.parent_path();
  return paths;
}

Diarizer::Diarizer(DiarizationModels models, DiarizationConfig config,
                   std::shared_ptr<runtime::SessionShare> shared_sessions)
    : model_paths_(std::move(models)), config_(std::move(config)), models_(new Models) {
  if (!shared_sessions) shared_sessions = std::make_shared<runtime::SessionShare>();
  config_.validate();
  // Each step timed in the debug log: where a cold start goes.
  auto step_start = std::chrono::steady_clock::now();
  const auto log_step = [&step_start](std::string_view step) {
    spdlog::debug("{} in {:.3f} s", step, seconds_since(step_start));
    step_start = std::chrono::steady_clock::now();
  };
  const ModelSessionPlan sessions = plan_model_sessions(model_paths_, config_);
  for (const auto* route : {&sessions.segmentation_route, &sessions.embedding_route}) {
    // Where each model runs and why: a diagnosis, not news (-v shows it).
    if (*route) spdlog::debug("{}", (*route)->reason);
  }
  log_step("models routed");
  models_->segmentation = std::make_unique<SegmentationModel>(
      model_paths_.segmentation, sessions.segmentation, shared_sessions);
  log_step("segmentation model loaded");
  models_->embedding = std::make_unique<EmbeddingExtractor>(model_paths_.embedding,
                                                            sessions.embedding, shared_sessions);
  if (embeds_in_graph_passes() || (config_.embedding_mode == EmbeddingMode::kExact &&
                                   models_->embedding->pools_exact_in_graph())) {
    models_->embedding->open_pooled_session(
        embeds_in_graph_passes() &&
        shared_trunk_features_in_graph(config_.shared_trunk, *models_->embedding));
  }
  log_step("embedding model loaded");

  if (config_.clustering.method == cluster::ClusteringMethod::kVbx) {
    models_->plda = cluster::Plda::load(model_paths_.plda);
  }
}

Diarizer::~Diarizer() = default;

DiarizationResult Diarizer::diarize(std::span<const float> samples, const std::string& uri,
                                    ProgressSink& progress,
                                    const std::optional<std::filesystem::path>& save_directory,
                                    const SamplesPassed& passed, const SamplesNeeded& needed) {
  std::vector<StageTimes> times(1);
  const std::span<const float> recordings[] = {samples};
  const std::vector<DiarizationIntermediates> intermediates =
      segment_and_embed(recordings, times, progress, passed, needed);
  // Clustering's peak (its distances, about 150 MB for a long recording) would otherwise stack on
  // what the model stages freed.
  release_freed_heap();
  if (save_directory) write_model_intermediates(*save_directory, intermediates.front(), uri);
  DiarizationResult result = diarize_from_embeddings(intermediates.front(), config_,
                                                     models_->plda ? &*models_->plda : nullptr, uri,
                                                     times.front(), save_directory);
  result.stage_times = times.front();
  return result;
}

DiarizationResult Diarizer::cluster(
    const DiarizationIntermediates& intermediates, const std::string& uri, StageTimes& times,
    const std::optional<cluster::SpeakerCountConstraints>& speakers) const {
  DiarizationConfig config = config_;
  if (speakers) {
    speakers->validate();
    config.speakers = *speakers;
  }
  DiarizationResult result = diarize_from_embeddings(
      intermediates, config, models_->plda ? &*models_->plda : nullptr, uri, times);
  result.stage_times = times;
  return result;
}

// One recording of a segment_and_embed call: where its chunks sit in the stream of all chunks.
struct Diarizer::RecordingWork {
  std::span<const float> samples;
  ChunkPlan plan;
  std::size_t first_chunk = 0;  // in the stream of every recording's chunks
  std::size_t chunk_count = 0;
  std::size_t embedded = 0;  // chunks of this recording embedded so far
  // Its binarized segmentations while the networks run, as one powerset class a frame
  // [chunk_count, frames]: a twelfth of the float activations, which only its finished
  // recording gets (2 MB an hour instead of 25 MB, held from the first batch on).
  std::vector<std::uint8_t> powerset_classes;
  std::size_t frames = 0;  // per chunk
};

std::vector<DiarizationIntermediates> Diarizer::segment_and_embed(
    std::span<const std::span<const float>> recordings, std::vector<StageTimes>& times,
    ProgressSink& progress, const SamplesPassed& passed, const SamplesNeeded& needed) {
  using Clock = std::chrono::steady_clock;
  const auto networks_start = Clock::now();
  times.resize(recordings.size());
  std::vector<DiarizationIntermediates> intermediates(recordings.size());
  std::vector<RecordingWork> work(recordings.size());
  std::size_t chunk_count = 0;
  for (std::size_t r = 0; r < recordings.size(); ++r) {
    work[r].samples = recordings[r];
    work[r].plan = plan_chunks(static_cast<std::int64_t>(recordings[r].size()), kSampleRate,
                               kChunkSeconds, config_.step_seconds);
    work[r].first_chunk = chunk_count;
    work[r].chunk_count = static_cast<std::size_t>(work[r].plan.num_chunks());
    chunk_count += work[r].chunk_count;
    intermediates[r].duration_seconds = static_cast<double>(recordings[r].size()) / kSampleRate;
    intermediates[r].chunks = work[r].plan.chunks();
  }
  // The recording that chunk `chunk` of the stream belongs to.
  const auto recording_of = [&work](std::size_t chunk) {
    const auto after = std::upper_bound(
        work.begin(), work.end(), chunk,
        [](std::size_t value, const RecordingWork& w) { return value < w.first_chunk; });
    return static_cast<std::size_t>(std::distance(work.begin(), after) - 1);
  };
  // Chunks per embedding call: pooled in the graph, a whole pass of the shared trunk.
  const std::size_t embedding_batch = embeds_in_graph_passes()
                                          ? config_.shared_trunk.chunks_per_pass
                                          : config_.embedding_batch_size;
  const std::size_t dimension = models_->embedding->dimension();
  const Powerset powerset(3, 2);
  const auto speakers = static_cast<std::size_t>(powerset.num_classes());
  // Chunks [first, first + count) of a recording as binarized segmentations [count, frames,
  // speakers].
  const auto segmentations_of = [&powerset, speakers](const RecordingWork& recording,
                                                      std::size_t first, std::size_t count) {
    NdArray<float> segmentations({count, recording.frames, speakers});
    powerset.write_multilabel(std::span(recording.powerset_classes)
                                  .subspan(first * recording.frames, count * recording.frames),
                              segmentations.values());
    return segmentations;
  };

  // Segmentation batches travel to the embedding loop through this queue. Streaming, they are
  // embedded while later chunks are still being segmented (on a GPU the embeddings run while
  // the CPU segments); otherwise segmentation finishes first. Embedding always goes in the same
  // `embedding_batch` chunk ranges of each recording, so both orders give identical results.
  struct SegmentedBatch {
    std::size_t first_chunk = 0;
    NdArray<float> log_probabilities;
  };
  const std::size_t capacity =
      config_.streaming ? std::max<std::size_t>(2 * embedding_batch, 1) : chunk_count + 1;
  BoundedQueue<SegmentedBatch> queue(capacity);

  double segmentation_seconds = 0.0;
  auto segment = [&] {
    try {
      const auto segmentation_start = Clock::now();
      if (chunk_count > 0) {
        models_->segmentation->run(
            chunk_count,
            [&](std::size_t chunk, std::span<float> out) {
              const std::size_t r = recording_of(chunk);
              const RecordingWork& recording = work[r];
              const auto local = static_cast<std::int64_t>(chunk - recording.first_chunk);
              if (needed) {
                // The shared first convolution reads the recording past the chunk's end.
                needed(r, std::min(recording.samples.size(),
                                   chunk_end(recording.plan, local) +
                                       models_->segmentation->samples_read_past_chunk()));
              }
              copy_chunk(recording.samples, recording.plan, local, out);
            },
            config_.streaming ? SegmentationModel::ProgressCallback{}
                              : [&](std::size_t done) { progress.update(done); },
            [&](std::size_t first_chunk, const NdArray<float>& log_probabilities) {
              // Measured up to the hand-over of each batch, not past the last: on a busy machine
              // the worker threads' teardown after it would otherwise count as segmentation
              // while the last embeddings already run.
              segmentation_seconds = seconds_since(segmentation_start);
              if (!queue.push({first_chunk, log_probabilities})) {
                throw std::runtime_error("embedding stopped");
              }
            },
            [&](std::size_t chunk) {
              const std::size_t r = recording_of(chunk);
              return SegmentationModel::ChunkOrigin{
                  r, work[r].samples,
                  work[r].plan.chunk_offset(
                      static_cast<std::int64_t>(chunk - work[r].first_chunk))};
            });
      }
      queue.close();
    } catch (...) {
      queue.close(std::current_exception());
    }
  };

  std::jthread segmentation_thread;
  if (config_.streaming) {
    // One stage for both networks: a chunk counts once when segmented and once when embedded,
    // so the count moves from the first segmented batch on instead of waiting for the first
    // embedding range (32 chunks, or a whole pass of the shared trunk).
    progress.begin("segmentation+embedding", 2 * chunk_count);
    segmentation_thread = std::jthread(segment);
  } else {
    progress.begin("segmentation", chunk_count);
    segment();
    progress.end();
    progress.begin("embedding", chunk_count);
  }
  // Should embedding fail, the segmentation thread must not wait forever on a full queue.
  struct CancelOnExit {
    BoundedQueue<SegmentedBatch>& queue;
    ~CancelOnExit() { queue.cancel(); }
  } cancel_on_exit{queue};

  std::size_t segmented = 0;       // chunks of the stream segmented so far
  std::size_t embedded_total = 0;  // for progress
  std::size_t current = 0;         // the recording being embedded
  // Reported from this thread only, so the counts reach the sink in order.
  const auto report_progress = [&] {
    progress.update(config_.streaming ? segmented + embedded_total : embedded_total);
  };
  for (;;) {
    std::optional<SegmentedBatch> batch = queue.pop();
    if (batch) {
      const std::vector<std::uint8_t> classes = powerset.decode(batch->log_probabilities);
      const std::size_t rows = batch->log_probabilities.dim(0);
      const std::size_t frames = batch->log_probabilities.dim(1);
      for (std::size_t row = 0; row < rows; ++row) {
        const std::size_t chunk = batch->first_chunk + row;
        const std::size_t r = recording_of(chunk);
        RecordingWork& recording = work[r];
        if (recording.powerset_classes.empty()) {
          recording.frames = frames;
          recording.powerset_classes.resize(recording.chunk_count * frames);
          intermediates[r].embeddings =
              NdArray<float>({recording.chunk_count, speakers, dimension});
        }
        std::copy_n(classes.data() + row * frames, frames,
                    recording.powerset_classes.data() + (chunk - recording.first_chunk) * frames);
      }
      segmented = batch->first_chunk + rows;
      if (config_.streaming) report_progress();
    }
    // Embed whole ranges of the current recording as they become available, its last (short)
    // range only once all its chunks are segmented, then move on to the next recording.
    while (current < work.size()) {
      RecordingWork& recording = work[current];
      const std::size_t available =
          std::min(segmented - std::min(segmented, recording.first_chunk), recording.chunk_count);
      const std::size_t waiting = available - recording.embedded;
      const bool complete = available == recording.chunk_count;
      if (waiting == 0 && complete) {
        if (recording.chunk_count > 0) {
          intermediates[current].segmentations =
              segmentations_of(recording, 0, recording.chunk_count);
          recording.powerset_classes = {};
        }
        ++current;
        continue;
      }
      if (waiting < embedding_batch && !(complete && waiting > 0)) break;
      const std::size_t count = std::min(embedding_batch, waiting);
      DiarizationIntermediates& target = intermediates[current];
      if (needed) {
        // The shared trunk reads ahead of its chunks (blocks, margins, a recording-wide mean):
        // it starts once the whole recording is there.
        needed(current, config_.embedding_mode == EmbeddingMode::kShared
                            ? recording.samples.size()
                            : chunk_end(recording.plan,
                                        static_cast<std::int64_t>(recording.embedded + count - 1)));
      }
      const auto embedding_start = Clock::now();
      const NdArray<float> embedded_range =
          embed_chunk_range(recording.samples, recording.plan, recording.embedded,
                            segmentations_of(recording, recording.embedded, count));
      std::copy(embedded_range.values().begin(), embedded_range.values().end(),
                target.embeddings.data() + recording.embedded * embedded_range.size() / count);
      times[current].add("embedding", seconds_since(embedding_start));
      recording.embedded += count;
      if (passed) {
        // The shared trunk's blocks (two minutes) and margins reach back before the next chunk.
        constexpr std::int64_t kReachBackSamples = 180 * kSampleRate;
        const std::int64_t next_start =
            static_cast<std::int64_t>(recording.embedded) * recording.plan.step_samples;
        if (next_start > kReachBackSamples) {
          passed(current, static_cast<std::size_t>(next_start - kReachBackSamples));
        }
      }
      embedded_total += count;
      report_progress();
    }
    if (!batch) break;
  }
  progress.end();
  if (segmentation_thread.joinable()) segmentation_thread.join();
  // The tail where only embedding runs, and the networks are half idle (SPDLOG_LEVEL=debug).
  spdlog::debug(
      "{} recording(s), {} chunks: segmentation handed on its last batch {:.3f} s after "
      "it started, embedding ended {:.3f} s after it",
      recordings.size(), chunk_count, segmentation_seconds, seconds_since(networks_start));
  // Segmentation ran over every recording at once: each gets its share by chunks. With
  // streaming the stages overlap: each is its own working time, and their sum can exceed the
  // wall time of both together.
  for (std::size_t r = 0; r < work.size(); ++r) {
    const double share = chunk_count > 0 ? static_cast<double>(work[r].chunk_count) /
                                               static_cast<double>(chunk_count)
                                         : 0.0;
    StageTimes ordered;
    ordered.add("segmentation", segmentation_seconds * share);
    for (const auto& [stage, seconds] : times[r].entries()) ordered.add(stage, seconds);
    ordered.add("embedding", 0.0);
    times[r] = ordered;
  }
  return intermediates;
}

bool Diarizer::embeds_in_graph_passes() const {
  return config_.embedding_mode == EmbeddingMode::kShared &&
         shared_trunk_pools_in_graph(config_.shared_trunk, *models_->embedding);
}

namespace {

// A speaker who speaks in a chunk gets a finite embedding from a sound model; NaN or infinity
// there (all-NaN weights) would otherwise cluster into one speaker with only a warning. Silent
// speakers may get NaN (pooling over no frames), as in pyannote.
const NdArray<float>& require_finite_for_speech(const NdArray<float>& embeddings,
                                                const NdArray<float>& segmentations,
                                                const std::string& model_name) {
  const std::size_t chunks = segmentations.dim(0);
  const std::size_t frames = segmentations.dim(1);
  const std::size_t speakers = segmentations.dim(2);
  const std::size_t dimension = embeddings.dim(2);
  for (std::size_t c = 0; c < chunks; ++c) {
    for (std::size_t s = 0; s < speakers; ++s) {
      bool speaks = false;
      for (std::size_t f = 0; f < frames && !speaks; ++f) speaks = segmentations(c, f, s) > 0.0f;
      const float* embedding = embeddings.data() + (c * speakers + s) * dimension;
      if (speaks && !std::all_of(embedding, embedding + dimension,
                                 [](float value) { return std::isfinite(value); })) {
        fail(
            "{}: returned NaN or infinite embeddings for speech; the model is damaged (check "
            "it with `parley models verify`, or fetch it again)",
            model_name);
      }
    }
  }
  return embeddings;
}

}  // namespace

NdArray<float> Diarizer::embed_chunk_range(std::span<const float> samples, const ChunkPlan& plan,
                                           std::size_t first_chunk,
                                           const NdArray<float>& range_segmentations) {
  NdArray<float> embeddings =
      embed_chunk_range_unchecked(samples, plan, first_chunk, range_segmentations);
  require_finite_for_speech(embeddings, range_segmentations, models_->embedding->model_name());
  return embeddings;
}

NdArray<float> Diarizer::embed_chunk_range_unchecked(std::span<const float> samples,
                                                     const ChunkPlan& plan, std::size_t first_chunk,
                                                     const NdArray<float>& range_segmentations) {
  const std::size_t count = range_segmentations.dim(0);
  if (config_.embedding_mode == EmbeddingMode::kShared) {
    if (first_chunk == 0 || !models_->shared_trunk) {
      SharedTrunkConfig shared_config = config_.shared_trunk;
      shared_config.threads = config_.threads;
      models_->shared_trunk =
          std::make_unique<SharedTrunk>(*models_->embedding, samples, plan, shared_config);
    }
    NdArray<float> embedded = models_->shared_trunk->embed_chunks(first_chunk, range_segmentations);
    if (first_chunk + count >= static_cast<std::size_t>(plan.num_chunks())) {
      const SharedTrunk& trunk = *models_->shared_trunk;
      spdlog::debug(
          "shared trunk: {} passes over {} fbank frames; features {:.2f} s, trunk {:.2f} s, "
          "pooling {:.2f} s",
          trunk.trunk_passes(), trunk.trunk_input_frames(), trunk.feature_seconds(),
          trunk.trunk_seconds(), trunk.pooling_seconds());
      models_->shared_trunk.reset();
    }
    return embedded;
  }
  const auto window = static_cast<std::size_t>(plan.window_samples);
  // Chunks are cut range by range so memory stays at one batch of waveforms.
  NdArray<float> waveforms({count, window});
  for (std::size_t i = 0; i < count; ++i) {
    copy_chunk(samples, plan, static_cast<std::int64_t>(first_chunk + i),
               std::span<float>(waveforms.data() + i * window, window));
  }
  return models_->embedding->embed_chunks(waveforms, range_segmentations);
}

DiarizationResult diarize_from_embeddings(
    const DiarizationIntermediates& intermediates, const DiarizationConfig& config,
    const cluster::Plda* plda, const std::string& uri, StageTimes& times,
    const std::optional<std::filesystem::path>& save_directory) {
  DiarizationResult result;
  result.uri = uri;
  result.duration_seconds = intermediates.duration_seconds;

  const SlidingWindowFeature<int> count =
      speaker_count(intermediates.segmentations, intermediates.chunks, segmentation3_frames());
  if (max_count(count.data) == 0) {
    // Nobody speaks: pyannote returns an empty diarization without clustering.
    return result;
  }

  cluster::ClusteringResult clusters;
  {
    ScopedStageTimer timer(times, "clustering");
    clusters = cluster::cluster_embeddings(intermediates.embeddings, intermediates.segmentations,
                                           config.clustering, config.speakers, plda,
                                           intermediates.duration_seconds);
  }
  const int detected = static_cast<int>(clusters.cluster_count());
  if (detected < config.speakers.resolved_min() ||
      (config.speakers.resolved_max() && detected > *config.speakers.resolved_max())) {
    spdlog::warn(
        "{}: detected {} speakers, outside the requested bounds ({}); the recording may be too "
        "short for that many speakers",
        uri, detected, config.speakers.describe());
  }

  FrameDiarization frames;
  {
    ScopedStageTimer timer(times, "reconstruction");
    PostprocessOptions options;
    options.max_speakers = config.speakers.resolved_max();
    options.min_duration_off = config.min_duration_off;
    frames = diarize_frames(intermediates.segmentations, intermediates.chunks,
                            clusters.hard_clusters, count, options);
  }
  result.turns = clip_to_recording(frames.turns, intermediates.duration_seconds);
  result.exclusive_turns =
      clip_to_recording(frames.exclusive_turns, intermediates.duration_seconds);
  result.speaker_count = frames.speaker_order.size();

  // Centroids in label order; a speaker the count introduced beyond the clusters gets zeros,
  // as pyannote pads.
  const std::size_t dimension = clusters.centroids.empty() ? 0 : clusters.centroids.dim(1);
  result.speaker_embeddings = NdArray<float>({frames.speaker_order.size(), dimension});
  for (std::size_t label = 0; label < frames.speaker_order.size(); ++label) {
    const auto cluster = static_cast<std::size_t>(frames.speaker_order[label]);
    if (cluster >= clusters.cluster_count()) continue;
    for (std::size_t d = 0; d < dimension; ++d) {
      result.speaker_embeddings(label, d) = static_cast<float>(clusters.centroids(cluster, d));
    }
  }

  if (save_directory) {
    cluster::write_clustering_intermediates(*save_directory, clusters);
    write_reconstruction(*save_directory, frames, intermediates.chunks, config.min_duration_off);
  }
  return result;
}

}  // namespace parley::pipeline
