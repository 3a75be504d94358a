#include "pipeline/diarizer.h"

#include <fmt/ranges.h>
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

#include "core/error.h"
#include "core/heap.h"
#include "core/sample_rate.h"
#include "core/stage_timer.h"
#include "core/trace.h"
#include "frames/postprocess.h"
#include "frames/speaker_count.h"
#include "models/model_locator.h"
#include "pipeline/intermediates_io.h"
#include "pipeline/segment_embed_scheduler.h"
#include "stages/embedding.h"
#include "stages/embedding_graphs.h"
#include "stages/segmentation.h"
#include "stages/shared_trunk_pass.h"

namespace parley::pipeline {
namespace {

constexpr double kChunkSeconds = 10.0;

// The zero-padded last chunk can stretch a final turn up to a chunk step past the end of the
// audio (pyannote leaves it so); a turn past the end is not a place anyone spoke.
std::vector<frames::Turn> clip_to_recording(const std::vector<frames::Turn>& turns,
                                            double duration_seconds) {
  std::vector<frames::Turn> clipped;
  clipped.reserve(turns.size());
  for (frames::Turn turn : turns) {
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
  if (placement && placement->accelerator_segmentation_batch_size < 1) {
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
  if (placement) {
    check_segmentation_batch("accelerator_segmentation_batch_size",
                             placement->accelerator_segmentation_batch_size);
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
  if (embedding_mode == stages::EmbeddingMode::kShared) {
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
  if (placement) placement->validate();
  clustering.validate();
  speakers.validate();
}

nlohmann::json OutputSettings::to_json() const {
  nlohmann::json json = {
      {"step_seconds", step_seconds},
      {"share_segmentation_convolution", share_segmentation_convolution},
      {"accelerator_float16", accelerator_float16},
      {"embedding_exclude_overlap", embedding_exclude_overlap},
      {"embedding_mode", std::string(stages::embedding_mode_name(embedding_mode))},
      {"min_duration_off", min_duration_off},
      {"clustering", clustering.describe()},
      {"speakers", speakers.describe()}};
  if (embedding_mode == stages::EmbeddingMode::kShared)
    json["shared_trunk"] = shared_trunk.to_string();
  return json;
}

void OutputSettings::check_recording_settings(const OutputSettings& recording) const {
  nlohmann::json configured = to_json();
  nlohmann::json asked = recording.to_json();
  for (const char* per_recording : {"clustering", "speakers"}) {
    configured.erase(per_recording);
    asked.erase(per_recording);
  }
  for (const auto& [field, value] : configured.items()) {
    const auto found = asked.find(field);
    const nlohmann::json other = found == asked.end() ? nlohmann::json() : *found;
    if (other != value) {
      fail(
          "{}: this run's networks use {} for every recording (got {} for one recording); only "
          "clustering and speaker counts may differ per recording",
          field, value.dump(), other.dump());
    }
  }
  for (const auto& [field, value] : asked.items()) {
    if (!configured.contains(field)) {
      fail("{}: this run's networks do not use it (got {} for one recording)", field, value.dump());
    }
  }
}

nlohmann::json ExecutionSettings::to_json() const {
  nlohmann::json json = {{"threads", threads},
                         {"segmentation_batch_size", segmentation_batch_size},
                         {"embedding_batch_size", embedding_batch_size},
                         {"segmentation_accelerator_sessions", segmentation_accelerator_sessions},
                         {"streaming", streaming},
                         {"embedding_graph_capture", embedding_graph_capture}};
  if (placement) {
    json["provider"] = placement->choice.to_string();
    json["provider_options"] = placement->options;
    if (placement->segmentation_choice) {
      json["segmentation_provider"] = placement->segmentation_choice->to_string();
    }
    if (placement->embedding_choice) {
      json["embedding_provider"] = placement->embedding_choice->to_string();
    }
    json["accelerator_segmentation_batch_size"] = placement->accelerator_segmentation_batch_size;
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
      placement ? fmt::format(", routed from provider {}", placement->choice.to_string()) : "",
      streaming, stages::embedding_mode_name(embedding_mode),
      embedding_mode == stages::EmbeddingMode::kShared ? ", " + shared_trunk.to_string() : "",
      accelerator_float16 ? ", accelerator_float16=true" : "",
      share_segmentation_convolution ? "" : ", share_segmentation_convolution=false");
}

struct Diarizer::Models {
  std::unique_ptr<stages::SegmentationModel> segmentation;
  std::unique_ptr<stages::EmbeddingExtractor> embedding;
  // Shared mode: the map of the recording being embedded (made at its first chunk range, freed
  // after its last).
  std::unique_ptr<stages::SharedTrunk> shared_trunk;
  StageTimes shared_trunk_times;  // the split of the last shared-mode recording
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
  for (const auto* route : {&sessions.segmentation_placement, &sessions.embedding_placement}) {
    // Where each model runs and why: a diagnosis, not news (-v shows it).
    if (*route) spdlog::debug("{}", (*route)->reason);
  }
  log_step("models routed");
  models_->segmentation = std::make_unique<stages::SegmentationModel>(
      model_paths_.segmentation, sessions.segmentation, shared_sessions);
  log_step("segmentation model loaded");
  models_->embedding = std::make_unique<stages::EmbeddingExtractor>(
      model_paths_.embedding, sessions.embedding, shared_sessions);
  if (embeds_in_graph_passes()) {
    // A session per pass shape (stages::PooledSessions::kOnePerShape): the whole pass's now,
    // the shorter ones' now too or at their first pass (SharedTrunkConfig::tail_sessions).
    const bool features_in_graph =
        stages::shared_trunk_features_in_graph(config_.shared_trunk, *models_->embedding);
    std::vector<stages::PooledPassShape> passes = stages::pooled_pass_shapes(
        config_.shared_trunk,
        static_cast<std::int64_t>(std::llround(config_.step_seconds * kSampleRate)),
        static_cast<std::int64_t>(std::llround(kChunkSeconds * kSampleRate)),
        models_->embedding->config().fbank, stages::EmbeddingGraphSettings{}.speakers);
    if (config_.shared_trunk.tail_sessions == stages::TailSessions::kAtFirstPass) {
      passes.erase(passes.begin(), passes.end() - 1);  // the whole pass is the last
    }
    std::vector<std::vector<runtime::InputShape>> pass_shapes;
    pass_shapes.reserve(passes.size());
    for (const stages::PooledPassShape& pass : passes) {
      pass_shapes.push_back(features_in_graph ? pass.inputs_from_samples() : pass.inputs());
    }
    models_->embedding->open_pooled_session(features_in_graph, pass_shapes);
  } else if (config_.embedding_mode == stages::EmbeddingMode::kExact &&
             models_->embedding->pools_exact_in_graph()) {
    models_->embedding->open_pooled_session();
  }
  log_step("embedding model loaded");

  if (config_.clustering.method == cluster::ClusteringMethod::kVbx) {
    models_->plda = cluster::Plda::load(model_paths_.plda);
  }
}

Diarizer::~Diarizer() = default;

std::size_t Diarizer::segmentation_chunks_in_flight() const {
  return models_->segmentation->accelerator_chunks_in_flight();
}

DiarizationResult Diarizer::diarize(
    std::span<const float> samples, const std::string& uri, ProgressSink& progress,
    const std::optional<std::filesystem::path>& save_directory, const SamplesPassed& passed,
    const SamplesNeeded& needed, const std::optional<cluster::SpeakerCountConstraints>& speakers) {
  // Before any model call: a count that cannot be met costs no diarization.
  DiarizationConfig config = config_;
  if (speakers) {
    speakers->validate();
    config.speakers = *speakers;
  }
  std::vector<StageTimes> times(1);
  const std::span<const float> recordings[] = {samples};
  const std::vector<DiarizationIntermediates> intermediates =
      segment_and_embed(recordings, times, progress, passed, needed);
  // Clustering's peak (its distances, large for a long recording) would otherwise stack on
  // what the model stages freed.
  release_freed_heap();
  if (save_directory) write_model_intermediates(*save_directory, intermediates.front(), uri);
  progress.begin("clustering", 1);
  DiarizationResult result = diarize_from_embeddings(intermediates.front(), config,
                                                     models_->plda ? &*models_->plda : nullptr, uri,
                                                     times.front(), save_directory);
  progress.end();
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

DiarizationResult Diarizer::cluster(const DiarizationIntermediates& intermediates,
                                    const std::string& uri, StageTimes& times,
                                    const OutputSettings& recording) const {
  config_.check_recording_settings(recording);
  recording.speakers.validate();
  DiarizationConfig config = config_;
  config.clustering = recording.clustering;
  config.speakers = recording.speakers;
  DiarizationResult result = diarize_from_embeddings(
      intermediates, config, models_->plda ? &*models_->plda : nullptr, uri, times);
  result.stage_times = times;
  return result;
}

std::vector<DiarizationIntermediates> Diarizer::segment_and_embed(
    std::span<const std::span<const float>> recordings, std::vector<StageTimes>& times,
    ProgressSink& progress, const SamplesPassed& passed, const SamplesNeeded& needed,
    std::size_t segmentation_rows, const ChunkRangeEmbedder& embed) {
  SegmentEmbedSettings settings;
  settings.segmentation_rows = segmentation_rows;
  settings.chunk_seconds = kChunkSeconds;
  settings.step_seconds = config_.step_seconds;
  settings.streaming = config_.streaming;
  settings.embedding_batch = embedding_range_chunks();
  settings.embedding_dimension = models_->embedding->dimension();
  settings.embedding_reads_whole_recording =
      config_.embedding_mode == stages::EmbeddingMode::kShared;
  SegmentEmbedScheduler scheduler(
      *models_->segmentation,
      [this, &embed](std::span<const float> samples, const frames::ChunkPlan& plan,
                     std::size_t first_chunk, const NdArray<float>& segmentations) {
        return embed_chunk_range(samples, plan, first_chunk, segmentations, embed);
      },
      settings);
  for (const std::span<const float> samples : recordings) scheduler.add(samples);
  return scheduler.run(times, progress, passed, needed);
}

std::size_t Diarizer::embedding_range_chunks() const {
  // Pooled in the graph, a whole pass of the shared trunk per embedding call.
  return embeds_in_graph_passes()
             ? stages::pass_chunks_at_step(
                   config_.shared_trunk.chunks_per_pass,
                   static_cast<std::int64_t>(std::llround(config_.step_seconds * kSampleRate)))
             : config_.embedding_batch_size;
}

DiarizationIntermediates Diarizer::embed_given_segmentations(std::span<const float> samples,
                                                             NdArray<float> segmentations) {
  const frames::ChunkPlan plan = frames::plan_chunks(
      static_cast<std::int64_t>(samples.size()), kSampleRate, kChunkSeconds, config_.step_seconds);
  const auto chunks = static_cast<std::size_t>(plan.num_chunks());
  const auto chunk_frames = static_cast<std::size_t>(frames::segmentation3_frames_per_chunk());
  if (segmentations.rank() != 3 || segmentations.dim(0) != chunks ||
      segmentations.dim(1) != chunk_frames) {
    fail(
        "segmentations of shape [{}] given for a recording of {} chunks of {} frames at a {} s "
        "step: pass the masks of this recording, made at this step",
        fmt::join(segmentations.shape(), ", "), chunks, chunk_frames, config_.step_seconds);
  }
  const std::size_t speakers = segmentations.dim(2);
  const std::size_t dimension = models_->embedding->dimension();
  DiarizationIntermediates result;
  result.duration_seconds = static_cast<double>(samples.size()) / kSampleRate;
  result.chunks = plan.chunks();
  result.embeddings = NdArray<float>({chunks, speakers, dimension});
  // Ranges as the scheduler cuts them (whole ones, then the rest): in shared mode the trunk's
  // passes follow the ranges.
  const std::size_t range_chunks = std::max<std::size_t>(embedding_range_chunks(), 1);
  const std::size_t per_chunk = chunk_frames * speakers;
  for (std::size_t first = 0; first < chunks; first += range_chunks) {
    const std::size_t count = std::min(range_chunks, chunks - first);
    const auto begin =
        segmentations.values().begin() + static_cast<std::ptrdiff_t>(first * per_chunk);
    NdArray<float> range(
        {count, chunk_frames, speakers},
        std::vector<float>(begin, begin + static_cast<std::ptrdiff_t>(count * per_chunk)));
    const NdArray<float> embedded = embed_chunk_range(samples, plan, first, range);
    std::copy(embedded.values().begin(), embedded.values().end(),
              result.embeddings.data() + first * speakers * dimension);
  }
  result.segmentations = std::move(segmentations);
  return result;
}

bool Diarizer::embeds_in_graph_passes() const {
  return config_.embedding_mode == stages::EmbeddingMode::kShared &&
         stages::shared_trunk_pools_in_graph(config_.shared_trunk, *models_->embedding);
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

const StageTimes& Diarizer::shared_trunk_times() const { return models_->shared_trunk_times; }

stages::EmbeddingExtractor& Diarizer::embedding_extractor() { return *models_->embedding; }

NdArray<float> Diarizer::embed_chunk_range(std::span<const float> samples,
                                           const frames::ChunkPlan& plan, std::size_t first_chunk,
                                           const NdArray<float>& range_segmentations,
                                           const ChunkRangeEmbedder& embed) {
  NdArray<float> embeddings =
      embed ? embed(samples, plan, first_chunk, range_segmentations)
            : embed_chunk_range_unchecked(samples, plan, first_chunk, range_segmentations);
  require_finite_for_speech(embeddings, range_segmentations, models_->embedding->model_name());
  return embeddings;
}

NdArray<float> Diarizer::embed_chunk_range_unchecked(std::span<const float> samples,
                                                     const frames::ChunkPlan& plan,
                                                     std::size_t first_chunk,
                                                     const NdArray<float>& range_segmentations) {
  const std::size_t count = range_segmentations.dim(0);
  if (config_.embedding_mode == stages::EmbeddingMode::kShared) {
    if (first_chunk == 0 || !models_->shared_trunk) {
      stages::SharedTrunkConfig shared_config = config_.shared_trunk;
      shared_config.threads = config_.threads;
      models_->shared_trunk =
          std::make_unique<stages::SharedTrunk>(*models_->embedding, samples, plan, shared_config);
    }
    NdArray<float> embedded = models_->shared_trunk->embed_chunks(first_chunk, range_segmentations);
    if (first_chunk + count >= static_cast<std::size_t>(plan.num_chunks())) {
      const stages::SharedTrunk& trunk = *models_->shared_trunk;
      spdlog::debug(
          "shared trunk: {} passes over {} fbank frames; features {:.2f} s, trunk {:.2f} s, "
          "pooling {:.2f} s",
          trunk.trunk_passes(), trunk.trunk_input_frames(), trunk.feature_seconds(),
          trunk.trunk_seconds(), trunk.pooling_seconds());
      if (trunk.pools_in_graph()) {
        // What the fixed pass lengths cost: the trunk runs over more frames than the recording
        // has (margins, and each pass's unused chunks where its range is shorter).
        std::vector<std::string> passes;
        for (const auto& [chunks, run] : trunk.graph_passes_by_chunks()) {
          passes.push_back(fmt::format("{} of {} chunks", run, chunks));
        }
        spdlog::debug(
            "shared trunk, pooling in the graph: {} chunks in {} passes ({}); trunk input {} "
            "fbank frames, features {}, for the recording's {} ({:.2f}x)",
            plan.num_chunks(), trunk.trunk_passes(), fmt::join(passes, ", "),
            trunk.trunk_input_frames(), trunk.feature_frames(), trunk.total_frames(),
            static_cast<double>(trunk.trunk_input_frames()) /
                static_cast<double>(std::max<std::size_t>(trunk.total_frames(), 1)));
      }
      models_->shared_trunk_times = {};
      models_->shared_trunk_times.add("embedding features", trunk.feature_seconds());
      models_->shared_trunk_times.add("embedding trunk", trunk.trunk_seconds());
      models_->shared_trunk_times.add("embedding pooling", trunk.pooling_seconds());
      models_->shared_trunk.reset();
    }
    return embedded;
  }
  const auto window = static_cast<std::size_t>(plan.window_samples);
  // Chunks are cut range by range so memory stays at one batch of waveforms.
  NdArray<float> waveforms({count, window});
  for (std::size_t i = 0; i < count; ++i) {
    frames::copy_chunk(samples, plan, static_cast<std::int64_t>(first_chunk + i),
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

  const frames::SlidingWindowFeature<int> count = frames::speaker_count(
      intermediates.segmentations, intermediates.chunks, frames::segmentation3_frames());
  if (frames::max_count(count.data) == 0) {
    // Nobody speaks: pyannote returns an empty diarization without clustering.
    return result;
  }

  cluster::ClusteringResult clusters;
  {
    ScopedStageTimer timer(times, "clustering");
    const TraceSpan span("clustering");
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

  frames::FrameDiarization frames;
  {
    ScopedStageTimer timer(times, "reconstruction");
    const TraceSpan span("reconstruction");
    frames::PostprocessOptions options;
    options.max_speakers = config.speakers.resolved_max();
    options.min_duration_off = config.min_duration_off;
    frames = frames::diarize_frames(intermediates.segmentations, intermediates.chunks,
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
