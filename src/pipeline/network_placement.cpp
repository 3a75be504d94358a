#include "pipeline/network_placement.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <system_error>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "core/heap.h"
#include "core/sha256.h"
#include "graph/accelerator_rewrite.h"
#include "graph/float16_graph.h"
#include "pipeline/diarizer.h"
#include "runtime/device_memory.h"
#include "runtime/placement.h"
#include "stages/embedding_graphs.h"

namespace parley::pipeline {
namespace {

// Segmentation's binarised frames move with reduced-precision float32 (TF32: 99.899 % of the eval
// recordings' frames equal the CPU's, under issue #30's 99.9 % gate; 100 % without), so it runs
// at full precision unless the user's options say otherwise. The embedding trunk keeps the
// provider's default: its embeddings pass the gate (docs/benchmarks.md, "Float16 and its gate").
void keep_segmentation_at_full_precision(stages::SegmentationConfig& segmentation) {
  const auto option = runtime::traits(segmentation.provider).reduced_precision_option;
  if (!option.empty()) segmentation.provider_options.try_emplace(std::string(option), "0");
}

constexpr double kChunkSeconds = 10.0;
constexpr std::int64_t kSamplesPerChunk = 160000;  // 10 s at 16 kHz
constexpr std::int64_t kSegmentationFrames = 589;
constexpr std::int64_t kPowersetClasses = 7;
constexpr std::int64_t kFbankFrames = 998;  // 10 s of 25 ms frames every 10 ms
constexpr std::int64_t kFbankBins = 80;
// WeSpeaker ResNet34's pooled feature map per chunk: 256 channels x 10 bins x 125 frames.
constexpr std::int64_t kTrunkFloatsPerChunk = 256 * 10 * 125;

std::size_t expected_chunks(double audio_seconds, double step_seconds) {
  if (audio_seconds <= kChunkSeconds) return 1;
  return static_cast<std::size_t>(std::ceil((audio_seconds - kChunkSeconds) / step_seconds)) + 1;
}

std::uintmax_t file_bytes(const std::filesystem::path& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  return ec ? 0 : size;
}

// On an accelerator ONNX Runtime's own CPU threads have nothing to compute; after every call
// they would only spin on the cores where fbank and pooling run. One intra-op thread there.
// On the CPU the embedding trunk gets ONNX Runtime's layout optimizations (NCHWc convolution
// kernels): less trunk time, embeddings equal to the default level's within rounding, and the
// same RTTM (docs/benchmarks.md, "Toward the hardware limit", has the figures).
// Segmentation keeps the default: its 1-D convolutions and LSTMs gain nothing there.
// Float16 where the config asks for it and the model runs on a dynamic-shape accelerator.
// Captured graphs where the config asks for them: refused, in the option's words, where the
// embedding network landed on a provider that cannot replay one.
ModelSessionPlan with_session_tuning(ModelSessionPlan plan, bool accelerator_float16,
                                     const DiarizationConfig& config) {
  if (config.embedding_graph_capture) {
    runtime::check_graph_capture(plan.embedding.session.provider, "cuda_graph",
                                 "the speaker-embedding network");
    plan.embedding.capture_pooled_graph = true;
  }
  plan.segmentation.float16 =
      accelerator_float16 && graph::float16_graph_suits(plan.segmentation.provider);
  plan.embedding.trunk_float16 =
      accelerator_float16 && graph::float16_graph_suits(plan.embedding.session.provider);
  if (plan.embedding.session.provider != runtime::ProviderId::kCpu) {
    plan.embedding.session.intra_op_threads = 1;
  } else {
    plan.embedding.session.optimization = runtime::GraphOptimization::kAll;
  }
  if (plan.segmentation.provider != runtime::ProviderId::kCpu) {
    plan.segmentation.intra_op_threads = 1;
  }
  return plan;
}

std::size_t largest_call(const runtime::PlacementDecision& decision) {
  std::size_t largest = 1;
  for (const auto& slice : decision.plan) largest = std::max(largest, slice.bucket);
  return largest;
}

struct ModelJob {
  std::filesystem::path model;
  runtime::ProviderChoice choice;
  runtime::Buckets buckets;
  std::function<std::vector<runtime::InputShape>(std::size_t batch)> shapes;
  std::uintmax_t input_bytes_per_item;
  std::uintmax_t output_bytes_per_item;
  // An accelerator gets the model rewritten (segmentation): its digest is the rewritten file's.
  bool rewritten_for_accelerator = false;
  // The digest of the file the accelerator loads when it is not `model` nor its rewrite (the
  // embedding trunk or pooled graph, stages/embedding_graphs.h); `shapes` are then its shapes.
  std::string loaded_sha256;
};

// The accelerator `choice` resolves to on this machine, if any (without saying anything).
std::optional<runtime::ProviderId> usable_accelerator(
    const runtime::ProviderChoice& choice, const ProviderPlacement& placement,
    const std::vector<runtime::ProviderStatus>& statuses) {
  if (placement.force == runtime::ForceMode::kCpu ||
      (!choice.automatic && choice.provider == runtime::ProviderId::kCpu)) {
    return std::nullopt;
  }
  runtime::OnceNotices quiet(nullptr);
  return runtime::resolve_provider(choice, statuses, quiet).accelerator;
}

std::vector<runtime::InputShape> segmentation_shapes(std::size_t batch) {
  return {{"waveform", {static_cast<std::int64_t>(batch), 1, kSamplesPerChunk}}};
}

std::vector<runtime::InputShape> embedding_shapes(std::size_t batch) {
  return {{"feats", {static_cast<std::int64_t>(batch), kFbankFrames, kFbankBins}}};
}

runtime::PlacementDecision place_one(const ModelJob& job, const ProviderPlacement& placement,
                                     std::size_t items, const runtime::CompileCache& cache,
                                     const runtime::CostModelStore& costs,
                                     const std::vector<runtime::ProviderStatus>& statuses,
                                     runtime::OnceNotices& notices) {
  runtime::ModelPlacementRequest request;
  request.choice = job.choice;
  request.options = placement.options;
  request.force = placement.force;
  request.model = job.model;
  request.shapes_for_batch = job.shapes;
  request.items = items;
  request.buckets = job.buckets;
  request.memory_need = runtime::estimate_memory_need(
      file_bytes(job.model), job.input_bytes_per_item, job.output_bytes_per_item);
  // The digest keys compiled graphs and cost constants: only worth reading the file for when an
  // accelerator is in play (an explicit but unavailable one throws here, with its reason).
  if (usable_accelerator(job.choice, placement, statuses)) {
    if (!job.loaded_sha256.empty()) {
      request.model_sha256 = job.loaded_sha256;
    } else {
      request.model_sha256 =
          job.rewritten_for_accelerator
              ? graph::accelerator_model_file(job.model, cache.root() / "models").sha256
              : sha256_file(job.model);
    }
  }
  return runtime::place_model(request, cache, costs, statuses, notices);
}

// The configured segmentation sessions (`wanted`): fewer when that many sessions of `batch` chunks
// would not fit in the device's free memory (said once), one on a static-shape provider.
int fitting_sessions(const ModelJob& job, runtime::ProviderId provider, int wanted,
                     const ProviderPlacement& placement, std::size_t batch,
                     const PlacementEnvironment& environment, runtime::OnceNotices& notices) {
  // A static-shape provider compiles each bucket per session: several sessions would compile
  // the same graph at once into one cache entry. Several sessions were measured on CUDA only.
  if (runtime::traits(provider).static_shapes || wanted <= 1) return 1;
  const std::optional<runtime::DeviceMemory> memory =
      environment.device_memory != nullptr
          ? *environment.device_memory
          : runtime::query_device_memory(
                provider,
                runtime::device_id_option(runtime::effective_options(provider, placement.options)));
  const std::uintmax_t per_session =
      runtime::estimate_memory_need(file_bytes(job.model), job.input_bytes_per_item,
                                    job.output_bytes_per_item)
          .for_batch(batch);
  const int sessions = runtime::sessions_that_fit(memory, per_session, wanted);
  if (sessions < wanted) {
    notices.say(fmt::format(
        "{}: {} segmentation calls of {} chunks at once need about {} of device memory, {} is "
        "free; using {} (segmentation_accelerator_sessions, accelerator_segmentation_batch_size)",
        runtime::provider_name(provider), wanted, batch,
        runtime::format_bytes(per_session * static_cast<std::uintmax_t>(wanted)),
        runtime::format_bytes(memory->free_bytes), sessions));
  }
  return sessions;
}

// On the CPU every call holds the activations of its whole batch (a short call is padded to
// it): batches whose chunks would not fit in the machine's memory end in std::bad_alloc or in
// swap. Refused here, before any model loads, saying what fits.
void check_cpu_batches_fit(const ModelSessionPlan& plan, const DiarizationConfig& config) {
  const std::uintmax_t memory = memory_budget_bytes();
  if (memory == 0) return;  // the system does not say; the fixed bounds still hold
  if (plan.segmentation.provider == runtime::ProviderId::kCpu) {
    const auto workers = static_cast<std::uintmax_t>(std::max(1, plan.segmentation.threads));
    const std::uintmax_t per_call = kCpuSegmentationBytesPerChunk * workers;
    const std::uintmax_t need = per_call * plan.segmentation.batch_size;
    if (need > memory) {
      fail(
          "segmentation_batch_size {}: {} segmentation worker(s) on the CPU, each with {} chunks "
          "per call, hold about {} of activations (about {} a chunk), more than this machine's "
          "budget of {} for them (half the memory parley may use); at most {} fit, and the default "
          "(automatic) runs as fast",
          plan.segmentation.batch_size, workers, plan.segmentation.batch_size,
          runtime::format_bytes(need), runtime::format_bytes(kCpuSegmentationBytesPerChunk),
          runtime::format_bytes(memory), std::max<std::uintmax_t>(1, memory / per_call));
    }
  }
  if (plan.embedding.session.provider == runtime::ProviderId::kCpu &&
      config.embedding_mode == stages::EmbeddingMode::kExact) {
    const std::uintmax_t need = kCpuExactEmbeddingBytesPerChunk * plan.embedding.batch_size;
    if (need > memory) {
      fail(
          "embedding_batch_size {}: exact-mode embedding calls of {} chunks on the CPU hold about "
          "{} of activations (about {} a chunk), more than this machine's budget of {} for them "
          "(half the memory parley may use); at most {} fit",
          plan.embedding.batch_size, plan.embedding.batch_size, runtime::format_bytes(need),
          runtime::format_bytes(kCpuExactEmbeddingBytesPerChunk), runtime::format_bytes(memory),
          std::max<std::uintmax_t>(1, memory / kCpuExactEmbeddingBytesPerChunk));
    }
  }
}

}  // namespace

// A recording's chunks are kept until clustering ends (docs/corpus.md, "Memory"): its
// segmentations as classes and then floats, its embeddings, and clustering's training embeddings
// in double, about 16 KiB a chunk. The step sets how many chunks an hour makes (3,600 at 1 s,
// 360,000 at 10 ms): refused when the expected recording's would not fit.
void check_step_fits(const DiarizationConfig& config, double audio_seconds) {
  constexpr std::uintmax_t kBytesKeptPerChunk = 16 << 10;
  const std::uintmax_t memory = memory_budget_bytes();
  if (memory == 0 || audio_seconds <= 0.0) return;
  const std::uintmax_t chunks = expected_chunks(audio_seconds, config.step_seconds);
  const std::uintmax_t need = chunks * kBytesKeptPerChunk;
  if (need <= memory) return;
  const double fitting_chunks = static_cast<double>(memory / kBytesKeptPerChunk);
  fail(
      "step_seconds {}: a recording of {:.1f} h makes {} chunks, whose segmentations and "
      "embeddings (about {} a chunk) take {} until clustering ends, more than this machine's "
      "budget of {} for them (half the memory parley may use); use a step of at least {:.2f} s",
      config.step_seconds, audio_seconds / 3600.0, chunks,
      runtime::format_bytes(kBytesKeptPerChunk), runtime::format_bytes(need),
      runtime::format_bytes(memory),
      std::ceil(100.0 * audio_seconds / std::max(1.0, fitting_chunks)) / 100.0);
}

ModelSessionPlan plan_model_sessions(const DiarizationModels& models,
                                     const DiarizationConfig& config,
                                     const PlacementEnvironment& environment) {
  ModelSessionPlan plan;
  stages::SegmentationConfig& segmentation = plan.segmentation;
  segmentation.threads = automatic_segmentation_workers(config.threads);
  segmentation.batch_size = config.segmentation_batch_size > 0
                                ? config.segmentation_batch_size
                                : automatic_segmentation_batch(config.threads);
  segmentation.accelerator_sessions = config.segmentation_accelerator_sessions;
  segmentation.provider = config.segmentation_provider;
  segmentation.provider_options = config.segmentation_provider_options;
  keep_segmentation_at_full_precision(segmentation);
  segmentation.share_first_convolution = config.share_segmentation_convolution;

  stages::EmbeddingConfig& embedding = plan.embedding;
  embedding.batch_size = config.embedding_batch_size;
  embedding.exclude_overlap = config.embedding_exclude_overlap;
  embedding.feature_threads = config.threads;
  embedding.session.intra_op_threads = config.threads;
  // A shared-trunk pass's activations would stay in the arena for the rest of the run; handing
  // them back costs little CPU time (docs/corpus.md).
  embedding.session.release_cpu_arena_after_run = true;
  embedding.session.provider = config.embedding_provider;
  embedding.session.provider_options = config.embedding_provider_options;
  if (!config.placement) {
    check_cpu_batches_fit(plan, config);
    return with_session_tuning(std::move(plan), config.accelerator_float16, config);
  }

  const ProviderPlacement& placement = *config.placement;
  const auto& statuses =
      environment.statuses != nullptr ? *environment.statuses : runtime::provider_statuses();
  runtime::OnceNotices& notices =
      environment.notices != nullptr ? *environment.notices : runtime::notices();
  const std::filesystem::path root =
      runtime::CompileCache::root_or_default(placement.compile_cache_root);
  const runtime::CompileCache cache(root);
  const runtime::CostModelStore costs(root, runtime::CostModelStore::this_machine_id());
  check_step_fits(config, placement.longest_audio_seconds > 0.0 ? placement.longest_audio_seconds
                                                                : placement.expected_audio_seconds);
  const std::size_t chunks = expected_chunks(placement.expected_audio_seconds, config.step_seconds);

  const ModelJob segmentation_job{models.segmentation,
                                  placement.segmentation_choice.value_or(placement.choice),
                                  runtime::Buckets::powers_of_two(std::max<std::size_t>(
                                      1, placement.accelerator_segmentation_batch_size)),
                                  &segmentation_shapes,
                                  kSamplesPerChunk * sizeof(float),
                                  kSegmentationFrames * kPowersetClasses * sizeof(float),
                                  true,
                                  {}};
  const auto segmentation_placement =
      place_one(segmentation_job, placement, chunks, cache, costs, statuses, notices);
  if (segmentation_placement.on_accelerator) {
    segmentation.provider = segmentation_placement.provider;
    segmentation.provider_options = placement.options;
    keep_segmentation_at_full_precision(segmentation);
    // Whole batches are the parallelism, from a few sessions at once, as many as fit.
    segmentation.threads = 1;
    segmentation.batch_size = largest_call(segmentation_placement);
    segmentation.accelerator_sessions = fitting_sessions(
        segmentation_job, segmentation_placement.provider, config.segmentation_accelerator_sessions,
        placement, segmentation.batch_size, environment, notices);
    if (runtime::traits(segmentation_placement.provider).static_shapes) {
      segmentation.batch_buckets = segmentation_job.buckets.capped(segmentation.batch_size);
    }
    segmentation.compile_cache_root = root;
  } else {
    segmentation.provider = runtime::ProviderId::kCpu;
    segmentation.provider_options.clear();
  }
  plan.segmentation_placement = segmentation_placement;

  ModelJob embedding_job{
      models.embedding,
      placement.embedding_choice.value_or(placement.choice),
      runtime::Buckets::powers_of_two(std::max<std::size_t>(1, config.embedding_batch_size)),
      &embedding_shapes,
      kFbankFrames * kFbankBins * sizeof(float),
      kTrunkFloatsPerChunk * sizeof(float),
      false,
      {}};
  bool embedding_pooled = false;  // the accelerator will run the pooled graph (shared mode)
  const auto embedding_accelerator = usable_accelerator(embedding_job.choice, placement, statuses);
  if (embedding_accelerator && runtime::traits(*embedding_accelerator).static_shapes) {
    // A static-shape provider loads the graphs of stages/embedding_graphs.h, never the file
    // itself: the cache hits that count are theirs.
    stages::EmbeddingGraphSettings settings;
    settings.batch_buckets = embedding_job.buckets;
    settings.shared = config.shared_trunk;
    settings.step_seconds = config.step_seconds;
    settings.fbank = embedding.fbank;
    settings.variance_epsilon = embedding.variance_epsilon;
    // Not an embedding model: the extractor says so when it loads it; the file's digest stands.
    if (const auto targets = stages::embedding_compile_targets(models.embedding, root, settings)) {
      embedding_pooled = config.embedding_mode == stages::EmbeddingMode::kShared &&
                         targets->pooled.has_value() &&
                         stages::shared_trunk_pools_in_graph(config.shared_trunk, true, true);
      if (embedding_pooled) {
        // One pass per call: whole passes, then a recording's rest in the shortest pass that
        // holds it, as runtime::plan_batches plans these buckets (stages::pooled_pass_chunks).
        embedding_job.buckets = runtime::Buckets(targets->pooled_pass_chunks);
        embedding_job.shapes = [chunks = targets->pooled_pass_chunks,
                                shapes = targets->pooled_shapes](std::size_t batch) {
          const auto found = std::find(chunks.begin(), chunks.end(), batch);
          if (found == chunks.end()) fail("no pooled pass holds {} chunks", batch);
          return shapes.at(static_cast<std::size_t>(found - chunks.begin()));
        };
        embedding_job.loaded_sha256 = targets->pooled->sha256;
      } else {
        // Exact mode. (Shared mode pooled on the host runs the trunk on passes of its block
        // length, which no one compiles ahead; the chunk-length buckets stand in for them.)
        embedding_job.shapes = [trunk = targets->trunk, frames = targets->chunk_frames,
                                bins = embedding.fbank.num_mel_bins](std::size_t batch) {
          return stages::trunk_input_shapes(trunk, batch, frames, bins);
        };
        embedding_job.loaded_sha256 = targets->trunk.sha256;
      }
    }
  }
  const auto embedding_placement =
      place_one(embedding_job, placement, chunks, cache, costs, statuses, notices);
  if (embedding_placement.on_accelerator) {
    embedding.session.provider = embedding_placement.provider;
    embedding.session.provider_options = placement.options;
    // Pooled in the graph the calls are whole passes; the trunk's batch size stays as it is.
    if (!embedding_pooled) {
      embedding.batch_size = std::min(embedding.batch_size, largest_call(embedding_placement));
    }
    if (runtime::traits(embedding_placement.provider).static_shapes) {
      embedding.batch_buckets = runtime::Buckets::powers_of_two(embedding.batch_size);
    }
    embedding.compile_cache_root = root;
  } else {
    embedding.session.provider = runtime::ProviderId::kCpu;
    embedding.session.provider_options.clear();
  }
  plan.embedding_placement = embedding_placement;
  check_cpu_batches_fit(plan, config);
  return with_session_tuning(std::move(plan), config.accelerator_float16, config);
}

void ProviderPlacement::validate() const {
  const bool named_cpu = !choice.automatic && choice.provider == runtime::ProviderId::kCpu;
  if ((named_cpu || force == runtime::ForceMode::kCpu) && !options.empty()) {
    std::vector<std::string> given;
    for (const auto& [key, value] : options) given.push_back(fmt::format("{}={}", key, value));
    fail("provider_options ({}) have no effect on the cpu provider ({}); drop them",
         fmt::join(given, ", "), force == runtime::ForceMode::kCpu ? "force_cpu" : "provider cpu");
  }
}

}  // namespace parley::pipeline
