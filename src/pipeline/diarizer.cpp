#include "pipeline/diarizer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/bounded_queue.h"
#include "core/error.h"
#include "core/npz.h"
#include "core/stage_timer.h"
#include "pipeline/embedding.h"
#include "pipeline/postprocess.h"
#include "pipeline/powerset.h"
#include "pipeline/segmentation.h"
#include "pipeline/speaker_count.h"

namespace parley::pipeline {
namespace {

constexpr int kSampleRate = 16000;
constexpr double kChunkSeconds = 10.0;

double scalar(const NpzArchive& archive, const std::string& key,
              const std::filesystem::path& source) {
  const auto values = npz_get(archive, key, source).as<double>();
  if (values.size() != 1) fail("{}: '{}' should hold one number", source.string(), key);
  return values(0);
}

// Copies chunks [first, first + count) of `array` [chunks, ...] into a new array.
NdArray<float> slice_chunks(const NdArray<float>& array, std::size_t first, std::size_t count) {
  std::vector<std::size_t> shape = array.shape();
  const std::size_t per_chunk = array.size() / std::max<std::size_t>(shape[0], 1);
  shape[0] = count;
  NdArray<float> slice(shape);
  std::memcpy(slice.data(), array.data() + first * per_chunk, count * per_chunk * sizeof(float));
  return slice;
}

void write_reconstruction(const std::filesystem::path& directory, const FrameDiarization& frames,
                          const SlidingWindow& chunks, double min_duration_off) {
  NpzArchive archive;
  const auto& count = frames.count.data;
  std::vector<std::uint8_t> count_values(count.size());
  for (std::size_t i = 0; i < count.size(); ++i) {
    count_values[i] = static_cast<std::uint8_t>(count(i));
  }
  archive["count"] = NpyArray::from<std::uint8_t>({count.size(), 1}, count_values);
  archive["discrete_diarization"] = NpyArray::from(frames.discrete.data);
  auto put = [&archive](const std::string& key, double value) {
    archive[key] = NpyArray::from<double>({}, std::span<const double>(&value, 1));
  };
  put("chunk_start", chunks.start());
  put("chunk_duration", chunks.duration());
  put("chunk_step", chunks.step());
  put("frame_start", frames.count.window.start());
  put("frame_duration", frames.count.window.duration());
  put("frame_step", frames.count.window.step());
  put("min_duration_off", min_duration_off);
  write_npz(directory / "reconstruction.npz", archive);
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

void DiarizationConfig::validate() const {
  if (!(step_seconds > 0.0) || step_seconds > kChunkSeconds) {
    fail("step_seconds must be in (0, {}] (got {})", kChunkSeconds, step_seconds);
  }
  if (threads < 1) fail("threads must be at least 1 (got {})", threads);
  if (segmentation_batch_size < 1 || embedding_batch_size < 1) {
    fail("segmentation_batch_size and embedding_batch_size must be at least 1 (got {} and {})",
         segmentation_batch_size, embedding_batch_size);
  }
  if (min_duration_off < 0.0) fail("min_duration_off must not be negative");
  if (routing && routing->accelerator_segmentation_batch_size < 1) {
    fail("accelerator_segmentation_batch_size must be at least 1");
  }
  if (segmentation_accelerator_sessions < 1) {
    fail("segmentation_accelerator_sessions must be at least 1 (got {})",
         segmentation_accelerator_sessions);
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
  clustering.validate();
  speakers.validate();
}

std::string DiarizationConfig::to_string() const {
  return fmt::format(
      "DiarizationConfig(step={}s, threads={}, segmentation_batch={}, "
      "segmentation_accelerator_sessions={}, embedding_batch={}, "
      "exclude_overlap={}, min_duration_off={}, clustering={}, speakers={}, "
      "embedding_provider={}, segmentation_provider={}{}, streaming={}, embedding_mode={}{})",
      step_seconds, threads, segmentation_batch_size, segmentation_accelerator_sessions,
      embedding_batch_size, embedding_exclude_overlap, min_duration_off, clustering.describe(),
      speakers.describe(), runtime::provider_name(embedding_provider),
      runtime::provider_name(segmentation_provider),
      routing ? fmt::format(", routed from provider {}", routing->choice.to_string()) : "",
      streaming, embedding_mode_name(embedding_mode),
      embedding_mode == EmbeddingMode::kShared ? ", " + shared_trunk.to_string() : "");
}

struct Diarizer::Models {
  std::unique_ptr<SegmentationModel> segmentation;
  std::unique_ptr<EmbeddingExtractor> embedding;
  // Shared mode: the map of the recording being embedded (made at its first chunk range, freed
  // after its last).
  std::unique_ptr<SharedTrunk> shared_trunk;
  std::optional<cluster::Plda> plda;
};

Diarizer::Diarizer(DiarizationModels models, DiarizationConfig config)
    : model_paths_(std::move(models)), config_(std::move(config)), models_(new Models) {
  config_.validate();
  const ModelSessionPlan sessions = plan_model_sessions(model_paths_, config_);
  for (const auto* route : {&sessions.segmentation_route, &sessions.embedding_route}) {
    if (*route) spdlog::info("{}", (*route)->reason);
  }
  models_->segmentation =
      std::make_unique<SegmentationModel>(model_paths_.segmentation, sessions.segmentation);
  models_->embedding =
      std::make_unique<EmbeddingExtractor>(model_paths_.embedding, sessions.embedding);

  if (config_.clustering.method == cluster::ClusteringMethod::kVbx) {
    models_->plda = cluster::Plda::load(model_paths_.plda);
  }
}

Diarizer::~Diarizer() = default;

DiarizationResult Diarizer::diarize(std::span<const float> samples, const std::string& uri,
                                    Progress& progress,
                                    const std::optional<std::filesystem::path>& save_directory) {
  StageTimes times;
  const ChunkPlan plan = plan_chunks(static_cast<std::int64_t>(samples.size()), kSampleRate,
                                     kChunkSeconds, config_.step_seconds);
  DiarizationIntermediates intermediates;
  intermediates.duration_seconds = static_cast<double>(samples.size()) / kSampleRate;
  intermediates.chunks = plan.chunks();
  segment_and_embed(samples, plan, intermediates, times, progress);

  if (save_directory) write_model_intermediates(*save_directory, intermediates);
  DiarizationResult result =
      diarize_from_embeddings(intermediates, config_, models_->plda ? &*models_->plda : nullptr,
                              uri, times, save_directory);
  result.stage_times = times;
  return result;
}

void Diarizer::segment_and_embed(std::span<const float> samples, const ChunkPlan& plan,
                                 DiarizationIntermediates& intermediates, StageTimes& times,
                                 Progress& progress) {
  using Clock = std::chrono::steady_clock;
  const auto chunk_count = static_cast<std::size_t>(plan.num_chunks());
  // Chunks per embedding call: pooled in the graph, a whole pass of the shared trunk.
  const std::size_t embedding_batch = embeds_in_graph_passes()
                                          ? config_.shared_trunk.chunks_per_pass
                                          : config_.embedding_batch_size;
  const std::size_t dimension = models_->embedding->dimension();
  const Powerset powerset(3, 2);

  // Segmentation batches travel to the embedding loop through this queue. Streaming, they are
  // embedded while later chunks are still being segmented (on a GPU the embeddings run while
  // the CPU segments); otherwise segmentation finishes first. Embedding always goes in the same
  // `embedding_batch` chunk ranges, so both orders give identical results.
  struct SegmentedBatch {
    std::size_t first_chunk = 0;
    NdArray<float> log_probabilities;
  };
  const std::size_t capacity =
      config_.streaming ? std::max<std::size_t>(2 * embedding_batch, 1) : chunk_count + 1;
  BoundedQueue<SegmentedBatch> queue(capacity);

  const auto segmentation_start = Clock::now();
  auto segment = [&] {
    try {
      models_->segmentation->run(
          chunk_count,
          [&](std::size_t chunk, std::span<float> out) {
            copy_chunk(samples, plan, static_cast<std::int64_t>(chunk), out);
          },
          config_.streaming ? SegmentationModel::ProgressCallback{}
                            : [&](std::size_t done) { progress.update(done); },
          [&](std::size_t first_chunk, const NdArray<float>& log_probabilities) {
            if (!queue.push({first_chunk, log_probabilities})) {
              throw std::runtime_error("embedding stopped");
            }
          });
      times.add("segmentation", seconds_since(segmentation_start));
      queue.close();
    } catch (...) {
      queue.close(std::current_exception());
    }
  };

  std::jthread segmentation_thread;
  if (config_.streaming) {
    progress.begin("segmentation+embedding", chunk_count);
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

  double embedding_seconds = 0.0;
  std::size_t segmented = 0;
  std::size_t embedded = 0;
  for (;;) {
    std::optional<SegmentedBatch> batch = queue.pop();
    if (batch) {
      NdArray<float> multilabel = powerset.to_multilabel(batch->log_probabilities);
      if (intermediates.segmentations.empty()) {
        intermediates.segmentations =
            NdArray<float>({chunk_count, multilabel.dim(1), multilabel.dim(2)});
        intermediates.embeddings = NdArray<float>({chunk_count, multilabel.dim(2), dimension});
      }
      std::copy(multilabel.values().begin(), multilabel.values().end(),
                intermediates.segmentations.data() +
                    batch->first_chunk * multilabel.size() / multilabel.dim(0));
      segmented = batch->first_chunk + multilabel.dim(0);
    }
    while (segmented - embedded >= embedding_batch || (!batch && embedded < segmented)) {
      const std::size_t count = std::min(embedding_batch, segmented - embedded);
      const auto embedding_start = Clock::now();
      const NdArray<float> embedded_range = embed_chunk_range(
          samples, plan, embedded, slice_chunks(intermediates.segmentations, embedded, count));
      std::copy(embedded_range.values().begin(), embedded_range.values().end(),
                intermediates.embeddings.data() + embedded * embedded_range.size() / count);
      embedding_seconds += seconds_since(embedding_start);
      embedded += count;
      progress.update(embedded);
    }
    if (!batch) break;
  }
  progress.end();
  if (segmentation_thread.joinable()) segmentation_thread.join();
  // With streaming the two overlap: each is its own working time, and their sum can exceed
  // the wall time of both together.
  times.add("embedding", embedding_seconds);
}

bool Diarizer::embeds_in_graph_passes() const {
  return config_.embedding_mode == EmbeddingMode::kShared &&
         shared_trunk_pools_in_graph(config_.shared_trunk, *models_->embedding);
}

NdArray<float> Diarizer::embed_chunk_range(std::span<const float> samples, const ChunkPlan& plan,
                                           std::size_t first_chunk,
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

void write_model_intermediates(const std::filesystem::path& directory,
                               const DiarizationIntermediates& intermediates) {
  std::error_code ec;
  std::filesystem::create_directories(directory, ec);
  if (ec) fail("{}: cannot create folder for intermediates: {}", directory.string(), ec.message());
  NpzArchive segmentations;
  segmentations["segmentations"] = NpyArray::from(intermediates.segmentations);
  write_npz(directory / "segmentations.npz", segmentations);
  NpzArchive embeddings;
  embeddings["embeddings"] = NpyArray::from(intermediates.embeddings);
  write_npz(directory / "raw_embeddings.npz", embeddings);
  nlohmann::json recording = {
      {"duration_seconds", intermediates.duration_seconds},
      {"chunk_start", intermediates.chunks.start()},
      {"chunk_duration", intermediates.chunks.duration()},
      {"chunk_step", intermediates.chunks.step()},
  };
  std::ofstream(directory / "recording.json") << recording.dump(2) << "\n";
}

DiarizationIntermediates read_model_intermediates(const std::filesystem::path& directory) {
  if (!std::filesystem::is_directory(directory)) {
    fail("{}: no such folder (expected the output of `parley diarize --save-intermediates`)",
         directory.string());
  }
  DiarizationIntermediates intermediates;
  const auto segmentations_path = directory / "segmentations.npz";
  const auto embeddings_path = directory / "raw_embeddings.npz";
  for (const auto& path : {segmentations_path, embeddings_path}) {
    if (!std::filesystem::exists(path)) {
      fail("{}: missing; recluster needs segmentations.npz and raw_embeddings.npz", path.string());
    }
  }
  intermediates.segmentations =
      npz_get(read_npz(segmentations_path), "segmentations", segmentations_path).as<float>();
  intermediates.embeddings =
      npz_get(read_npz(embeddings_path), "embeddings", embeddings_path).as<float>();
  if (intermediates.segmentations.rank() != 3 || intermediates.embeddings.rank() != 3 ||
      intermediates.segmentations.dim(0) != intermediates.embeddings.dim(0) ||
      intermediates.segmentations.dim(2) != intermediates.embeddings.dim(1)) {
    fail(
        "{}: segmentations [chunks, frames, speakers] and embeddings [chunks, speakers, dim] "
        "do not match",
        directory.string());
  }
  const std::size_t chunk_count = intermediates.segmentations.dim(0);

  const auto recording_path = directory / "recording.json";
  const auto reconstruction_path = directory / "reconstruction.npz";
  if (std::filesystem::exists(recording_path)) {
    nlohmann::json recording;
    try {
      std::ifstream(recording_path) >> recording;
      intermediates.duration_seconds = recording.at("duration_seconds").get<double>();
      intermediates.chunks = SlidingWindow(recording.at("chunk_start").get<double>(),
                                           recording.at("chunk_duration").get<double>(),
                                           recording.at("chunk_step").get<double>());
    } catch (const nlohmann::json::exception& error) {
      fail("{}: unreadable ({})", recording_path.string(), error.what());
    }
  } else if (std::filesystem::exists(reconstruction_path)) {
    // A pyannote goldens folder: the chunk window is in reconstruction.npz, and the recording
    // lasts at most until the end of the last chunk.
    const auto archive = read_npz(reconstruction_path);
    intermediates.chunks = SlidingWindow(scalar(archive, "chunk_start", reconstruction_path),
                                         scalar(archive, "chunk_duration", reconstruction_path),
                                         scalar(archive, "chunk_step", reconstruction_path));
    intermediates.duration_seconds =
        intermediates.chunks[static_cast<std::int64_t>(chunk_count) - 1].end;
  } else {
    fail("{}: neither recording.json nor reconstruction.npz says how the chunks were cut",
         directory.string());
  }
  return intermediates;
}

}  // namespace parley::pipeline
