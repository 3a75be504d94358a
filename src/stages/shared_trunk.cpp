#include "stages/shared_trunk.h"

#include <chrono>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/heap.h"
#include "core/parallel_for.h"
#include "core/stage_timer.h"
#include "graph/fbank_graph.h"
#include "graph/pooled_trunk_graph.h"
#include "stages/fixed_point_mean.h"
#include "stages/shared_trunk_pass.h"
#include "stages/stats_pooling.h"

namespace parley::stages {
namespace {

// Fbank frames per task when features are computed on several threads.
constexpr std::size_t kFramesPerFeatureTask = 512;

std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

// Fbank frames of the samples a pass of `pass_frames` computes its features from in the graph.
// Every pass of a length has one span, whatever its windows need (at most pass_frames +
// chunk_frames frames, and a stride more past the recording's end), so the graph keeps one set
// of shapes per pass length; whole blocks of frames, as the graph sums them.
std::size_t sample_span_frames(std::size_t pass_frames, std::size_t chunk_frames,
                               std::size_t time_stride) {
  const std::size_t block = graph::kFbankGraphFrameBlock;
  return ceil_div(pass_frames + chunk_frames + time_stride, block) * block;
}

}  // namespace

const char* embedding_mode_name(EmbeddingMode mode) {
  return mode == EmbeddingMode::kShared ? "shared" : "exact";
}

EmbeddingMode parse_embedding_mode(const std::string& name) {
  if (name == "exact") return EmbeddingMode::kExact;
  if (name == "shared") return EmbeddingMode::kShared;
  fail(
      "unknown embedding mode '{}': use exact (pyannote's, the trunk on every chunk) or shared "
      "(one trunk pass over the recording)",
      name);
}

const char* shared_trunk_mean_name(SharedTrunkMean mean) {
  return mean == SharedTrunkMean::kRecording ? "recording" : "sliding";
}

SharedTrunkMean parse_shared_trunk_mean(const std::string& name) {
  if (name == "sliding") return SharedTrunkMean::kSlidingWindow;
  if (name == "recording") return SharedTrunkMean::kRecording;
  fail("unknown shared-trunk mean '{}': use sliding or recording", name);
}

const char* shared_trunk_pooling_name(SharedTrunkPooling pooling) {
  switch (pooling) {
    case SharedTrunkPooling::kHost:
      return "host";
    case SharedTrunkPooling::kGraph:
      return "graph";
    case SharedTrunkPooling::kAuto:
      break;
  }
  return "auto";
}

SharedTrunkPooling parse_shared_trunk_pooling(const std::string& name) {
  if (name == "auto") return SharedTrunkPooling::kAuto;
  if (name == "host") return SharedTrunkPooling::kHost;
  if (name == "graph") return SharedTrunkPooling::kGraph;
  fail(
      "unknown shared-trunk pooling '{}': use auto (in the graph on an accelerator), host or "
      "graph",
      name);
}

const char* shared_trunk_features_name(SharedTrunkFeatures features) {
  switch (features) {
    case SharedTrunkFeatures::kHost:
      return "host";
    case SharedTrunkFeatures::kGraph:
      return "graph";
    case SharedTrunkFeatures::kAuto:
      break;
  }
  return "auto";
}

SharedTrunkFeatures parse_shared_trunk_features(const std::string& name) {
  if (name == "auto") return SharedTrunkFeatures::kAuto;
  if (name == "host") return SharedTrunkFeatures::kHost;
  if (name == "graph") return SharedTrunkFeatures::kGraph;
  fail(
      "unknown shared-trunk features '{}': use auto (in the graph on an accelerator that takes "
      "any shape), host or graph",
      name);
}

const char* tail_sessions_name(TailSessions when) {
  return when == TailSessions::kAtFirstPass ? "first-pass" : "start";
}

TailSessions parse_tail_sessions(const std::string& name) {
  if (name == "start") return TailSessions::kAtStart;
  if (name == "first-pass") return TailSessions::kAtFirstPass;
  fail(
      "unknown tail_sessions '{}': use start (every pass length's session with the models) or "
      "first-pass (each shorter pass's session at its first pass)",
      name);
}

void SharedTrunkConfig::validate() const {
  if (time_stride < 1) fail("shared trunk: time_stride must be at least 1");
  if (margin_frames % time_stride != 0) {
    fail("shared trunk: margin_frames ({}) must be a multiple of time_stride ({})", margin_frames,
         time_stride);
  }
  if (block_frames < time_stride || block_frames % time_stride != 0) {
    fail("shared trunk: block_frames ({}) must be a positive multiple of time_stride ({})",
         block_frames, time_stride);
  }
  if (pass_frames < time_stride || pass_frames % time_stride != 0) {
    fail("shared trunk: pass_frames ({}) must be a positive multiple of time_stride ({})",
         pass_frames, time_stride);
  }
  if (threads < 1) fail("shared trunk: threads must be at least 1 (got {})", threads);
  if (chunks_per_pass < 1) fail("shared trunk: chunks_per_pass must be at least 1");
  for (const std::size_t chunks : tail_chunks_per_pass) {
    if (chunks < 1) fail("shared trunk: tail_chunks_per_pass must hold at least 1 chunk each");
  }
}

// tail_sessions is left out: the output settings' fingerprint holds this text
// (pipeline::OutputSettings), and when sessions are made changes no output.
std::string SharedTrunkConfig::to_string() const {
  return fmt::format(
      "SharedTrunkConfig(block_frames={}, pass_frames={}, margin_frames={}, time_stride={}, "
      "alignment={}, mean={}, pooling={}, features={}, chunks_per_pass={}, "
      "tail_chunks_per_pass={}, threads={})",
      block_frames, pass_frames, margin_frames, time_stride, exact_alignment ? "exact" : "nearest",
      shared_trunk_mean_name(mean), shared_trunk_pooling_name(pooling),
      shared_trunk_features_name(features), chunks_per_pass,
      tail_chunks_per_pass.empty() ? std::string("none")
                                   : fmt::format("{}", fmt::join(tail_chunks_per_pass, ",")),
      threads);
}

void check_receptive_field(const graph::TimeReceptiveField& field,
                           const SharedTrunkConfig& config) {
  using Kind = graph::TimeReceptiveField::Kind;
  switch (field.kind) {
    case Kind::kGlobal:
      fail(
          "embedding_mode shared: the embedding model's trunk mixes the whole time axis ({}), "
          "so its frames cannot be shared between chunks; use embedding_mode exact",
          field.reason);
    case Kind::kUnknown: {
      static std::atomic<bool> warned{false};
      if (!warned.exchange(true)) {
        spdlog::warn(
            "embedding_mode shared: cannot tell how far the embedding model's trunk reaches "
            "along time ({}); assuming its margins of {} fbank frames cover it (embedding_mode "
            "exact does not depend on this)",
            field.reason, config.margin_frames);
      }
      return;
    }
    case Kind::kLocal:
      break;
  }
  if (field.stride != static_cast<std::int64_t>(config.time_stride)) {
    fail(
        "embedding_mode shared: the embedding model's trunk keeps one frame in {} along time, "
        "not {}; use embedding_mode exact with this model",
        field.stride, config.time_stride);
  }
  if (field.reach() > static_cast<std::int64_t>(config.margin_frames)) {
    fail(
        "embedding_mode shared: the embedding model's trunk reaches {} fbank frames along time "
        "({}), more than the shared trunk's margins of {}; use embedding_mode exact with this "
        "model",
        field.reach(), field.to_string(), config.margin_frames);
  }
}

bool shared_trunk_pools_in_graph(const SharedTrunkConfig& config,
                                 const EmbeddingExtractor& extractor) {
  return shared_trunk_pools_in_graph(
      config, extractor.config().session.provider != runtime::ProviderId::kCpu,
      extractor.can_pool_in_graph());
}

bool shared_trunk_pools_in_graph(const SharedTrunkConfig& config, bool on_accelerator,
                                 bool model_can_pool_in_graph) {
  switch (config.pooling) {
    case SharedTrunkPooling::kGraph:
      return true;
    case SharedTrunkPooling::kAuto:
      return on_accelerator && model_can_pool_in_graph && !config.exact_alignment;
    case SharedTrunkPooling::kHost:
      break;
  }
  return false;
}

bool shared_trunk_features_in_graph(const SharedTrunkConfig& config,
                                    const EmbeddingExtractor& extractor) {
  if (!shared_trunk_pools_in_graph(config, extractor)) return false;
  switch (config.features) {
    case SharedTrunkFeatures::kGraph:
      return true;
    case SharedTrunkFeatures::kAuto:
      return extractor.config().session.provider != runtime::ProviderId::kCpu &&
             !extractor.opens_per_shape() && config.mean == SharedTrunkMean::kSlidingWindow;
    case SharedTrunkFeatures::kHost:
      break;
  }
  return false;
}

std::vector<runtime::InputShape> PooledPassShape::inputs() const {
  using Names = graph::PooledTrunkGraphNames;
  const auto dim = [](std::size_t value) { return static_cast<std::int64_t>(value); };
  return {{Names::kFeatures, {1, dim(frames), dim(bins)}},
          {Names::kPairWeights, {1, dim(pairs), dim(trunk_frames)}},
          {Names::kInvWeightSums, {1, dim(pairs), 1}},
          {Names::kInvVarianceDenominators, {1, dim(pairs), 1}},
          {Names::kValidFrames, {1}}};
}

std::vector<runtime::InputShape> PooledPassShape::inputs_from_samples() const {
  using Names = graph::PooledTrunkGraphNames;
  using FbankNames = graph::FbankGraphNames;
  const auto dim = [](std::size_t value) { return static_cast<std::int64_t>(value); };
  return {{FbankNames::kSamples, {1, dim(samples)}},
          {FbankNames::kFrameIndex, {dim(frames)}},
          {FbankNames::kWindowLow, {dim(frames)}},
          {FbankNames::kWindowHigh, {dim(frames)}},
          {Names::kPairWeights, {1, dim(pairs), dim(trunk_frames)}},
          {Names::kInvWeightSums, {1, dim(pairs), 1}},
          {Names::kInvVarianceDenominators, {1, dim(pairs), 1}},
          {Names::kValidFrames, {1}}};
}

std::vector<std::size_t> pooled_pass_chunks(const SharedTrunkConfig& config,
                                            std::int64_t step_samples) {
  const std::size_t whole = pass_chunks_at_step(config.chunks_per_pass, step_samples);
  std::vector<std::size_t> chunks;
  for (const std::size_t tail : config.tail_chunks_per_pass) {
    if (tail >= config.chunks_per_pass) continue;
    const std::size_t at_step = pass_chunks_at_step(tail, step_samples);
    if (at_step < whole) chunks.push_back(at_step);
  }
  std::sort(chunks.begin(), chunks.end());
  chunks.erase(std::unique(chunks.begin(), chunks.end()), chunks.end());
  chunks.push_back(whole);
  return chunks;
}

std::vector<PooledPassShape> pooled_pass_shapes(const SharedTrunkConfig& config,
                                                std::int64_t step_samples,
                                                std::int64_t window_samples,
                                                const FbankConfig& fbank, std::size_t speakers) {
  config.validate();
  const Fbank frames_of(fbank);
  const std::size_t hop = fbank.window_shift();
  if (step_samples <= 0 || static_cast<std::size_t>(step_samples) % hop != 0) {
    fail(
        "embedding_mode shared needs a chunk step that is a whole number of {} ms fbank frames "
        "(got {} samples); use embedding_mode exact or a step such as 1 or 2 s",
        fbank.frame_shift_ms, step_samples);
  }
  const std::size_t chunk_frames =
      frames_of.num_frames(static_cast<std::size_t>(std::max<std::int64_t>(window_samples, 0)));
  if (chunk_frames == 0) fail("shared trunk: chunks are shorter than one fbank frame");
  // The widest span of a pass's consecutive chunks on the grid: the first chunk's start to the
  // last one's end (grid rounding adds at most one frame), plus a margin on each side.
  const std::size_t step_frames = static_cast<std::size_t>(step_samples) / hop;
  const std::size_t margin_grid = config.margin_frames / config.time_stride;
  std::vector<PooledPassShape> shapes;
  for (const std::size_t pass_chunks : pooled_pass_chunks(config, step_samples)) {
    PooledPassShape shape;
    shape.chunks = pass_chunks;
    shape.trunk_frames = ceil_div((pass_chunks - 1) * step_frames, config.time_stride) + 1 +
                         ceil_div(chunk_frames, config.time_stride) + 2 * margin_grid;
    shape.frames = shape.trunk_frames * config.time_stride;
    shape.samples = (sample_span_frames(shape.frames, chunk_frames, config.time_stride) - 1) * hop +
                    fbank.window_size();
    shape.pairs = pass_chunks * speakers;
    shape.bins = fbank.num_mel_bins;
    shapes.push_back(shape);
  }
  return shapes;
}

PooledPassShape pooled_pass_shape(const SharedTrunkConfig& config, std::int64_t step_samples,
                                  std::int64_t window_samples, const FbankConfig& fbank,
                                  std::size_t speakers) {
  return pooled_pass_shapes(config, step_samples, window_samples, fbank, speakers).back();
}

SharedTrunk::SharedTrunk(EmbeddingExtractor& extractor, std::span<const float> samples,
                         const frames::ChunkPlan& plan, const SharedTrunkConfig& config)
    : extractor_(extractor), samples_(samples), plan_(plan), config_(config), fbank_([&] {
        FbankConfig uncentred = extractor.config().fbank;
        uncentred.subtract_mean = false;
        return uncentred;
      }()) {
  config_.validate();
  check_receptive_field(extractor.trunk_receptive_field(), config_);
  hop_ = fbank_.config().window_shift();
  // Checks the step too. Only the pass lengths are kept: the pairs follow each range's speakers.
  for (const PooledPassShape& shape :
       pooled_pass_shapes(config_, plan_.step_samples, plan_.window_samples, fbank_.config(),
                          /*speakers=*/0)) {
    graph_passes_.push_back({shape.chunks, shape.trunk_frames});
  }
  // From here on a pass's chunks at this step (pooled_pass_shape counted them the same way).
  config_.chunks_per_pass = pass_chunks_at_step(config_.chunks_per_pass, plan_.step_samples);
  const auto window = static_cast<std::size_t>(plan_.window_samples);
  chunk_fbank_frames_ = fbank_.num_frames(window);
  trunk_frames_per_chunk_ = ceil_div(chunk_fbank_frames_, config_.time_stride);
  const auto last_chunk = plan_.num_chunks() - 1;
  padded_samples_ = static_cast<std::size_t>(plan_.chunk_offset(last_chunk)) + window;
  total_frames_ = fbank_.num_frames(padded_samples_);
  block_grid_frames_ = config_.block_frames / config_.time_stride;
  pool_in_graph_ = shared_trunk_pools_in_graph(config_, extractor);
  if (pool_in_graph_ && (config_.exact_alignment || !extractor.can_pool_in_graph())) {
    fail(
        "shared trunk: pooling in the graph needs nearest alignment and a model pooled over its "
        "last axis; use host pooling");
  }
  features_in_graph_ = shared_trunk_features_in_graph(config_, extractor);
  if (features_in_graph_ &&
      (config_.mean != SharedTrunkMean::kSlidingWindow || extractor.opens_per_shape())) {
    fail(
        "shared trunk: features in the graph need the sliding-window mean and a provider that "
        "takes any shape; compute them on the host");
  }

  if (config_.mean == SharedTrunkMean::kRecording) {
    const std::size_t bins = fbank_.config().num_mel_bins;
    std::vector<std::int64_t> sums(bins, 0);
    for (std::size_t first = 0; first < total_frames_; first += config_.block_frames) {
      const std::size_t count = std::min(config_.block_frames, total_frames_ - first);
      const std::vector<float> values = log_mel(first, count);
      for (std::size_t f = 0; f < count; ++f) {
        for (std::size_t m = 0; m < bins; ++m) sums[m] += to_fixed_point(values[f * bins + m]);
      }
    }
    recording_mean_.resize(bins);
    for (std::size_t m = 0; m < bins; ++m) {
      recording_mean_[m] =
          static_cast<double>(sums[m]) / kFixedPointScale / static_cast<double>(total_frames_);
    }
  }
}

std::vector<float> SharedTrunk::log_mel(std::size_t first, std::size_t count) const {
  const std::size_t bins = fbank_.config().num_mel_bins;
  const std::size_t frame_samples = fbank_.config().window_size();
  std::vector<float> values(count * bins);
  const std::size_t tasks = ceil_div(count, kFramesPerFeatureTask);
  parallel_for(tasks, config_.threads, [&](std::size_t task) {
    const std::size_t task_first = task * kFramesPerFeatureTask;
    const std::size_t task_frames = std::min(kFramesPerFeatureTask, count - task_first);
    const std::size_t sample_first = (first + task_first) * hop_;
    const std::size_t sample_count = (task_frames - 1) * hop_ + frame_samples;
    // The recording followed by zeros up to the end of the last chunk, as copy_chunk pads it.
    std::vector<float> buffer(sample_count, 0.0f);
    if (sample_first < samples_.size()) {
      const std::size_t available = std::min(sample_count, samples_.size() - sample_first);
      std::memcpy(buffer.data(), samples_.data() + sample_first, available * sizeof(float));
    }
    fbank_.compute_into(buffer,
                        std::span<float>(values.data() + task_first * bins, task_frames * bins));
  });
  return values;
}

NdArray<float> SharedTrunk::centred_features(std::size_t first, std::size_t count) {
  if (count == 0) fail("shared trunk: no fbank frames asked for");
  const std::size_t bins = fbank_.config().num_mel_bins;
  NdArray<float> features({count, bins});
  if (config_.mean == SharedTrunkMean::kRecording) {
    const std::vector<float> values = log_mel(first, count);
    feature_frames_ += count;
    for (std::size_t f = 0; f < count; ++f) {
      for (std::size_t m = 0; m < bins; ++m) {
        features(f, m) =
            static_cast<float>(static_cast<double>(values[f * bins + m]) - recording_mean_[m]);
      }
    }
    return features;
  }
  // Sliding window: frame f is centred with the mean over the chunk-length window
  // [f - W/2, f - W/2 + W), shifted inside the recording at its ends (there it is the first or
  // last chunk's own mean). For a frame at a chunk's centre it is that chunk's exact mean.
  const std::size_t width = std::min(chunk_fbank_frames_, total_frames_);
  // Frames past the end (zero padding) are centred with the last window's mean.
  const std::size_t span_first = std::min(window_start(first), first);
  const std::size_t span_last = std::max(window_start(first + count - 1) + width, first + count);
  const std::vector<float> values = log_mel(span_first, span_last - span_first);
  const std::size_t span = span_last - span_first;
  feature_frames_ += span;
  // Prefix sums per bin: prefix[(i) * bins + m] = sum of frames [span_first, span_first + i).
  std::vector<std::int64_t> prefix((span + 1) * bins, 0);
  for (std::size_t i = 0; i < span; ++i) {
    for (std::size_t m = 0; m < bins; ++m) {
      prefix[(i + 1) * bins + m] = prefix[i * bins + m] + to_fixed_point(values[i * bins + m]);
    }
  }
  const double scale = kFixedPointScale * static_cast<double>(width);
  for (std::size_t f = 0; f < count; ++f) {
    const std::size_t frame = first + f;
    const std::size_t lo = window_start(frame) - span_first;
    const std::size_t hi = lo + width;
    const std::size_t own = frame - span_first;
    for (std::size_t m = 0; m < bins; ++m) {
      const double mean =
          static_cast<double>(prefix[hi * bins + m] - prefix[lo * bins + m]) / scale;
      features(f, m) = static_cast<float>(static_cast<double>(values[own * bins + m]) - mean);
    }
  }
  return features;
}

std::size_t SharedTrunk::window_start(std::size_t frame) const {
  const std::size_t width = std::min(chunk_fbank_frames_, total_frames_);
  const std::size_t half = width / 2;
  return std::min(frame >= half ? frame - half : 0, total_frames_ - width);
}

NdArray<float> SharedTrunk::embed_pass_from_samples(std::size_t first, std::size_t count,
                                                    const NdArray<float>& weights,
                                                    const NdArray<float>& inv_weight_sums,
                                                    const NdArray<float>& inv_denominators,
                                                    const NdArray<float>& valid_frames) {
  const std::size_t width = std::min(chunk_fbank_frames_, total_frames_);
  const std::size_t span = sample_span_frames(count, chunk_fbank_frames_, config_.time_stride);
  const std::size_t span_first = std::min(window_start(first), first);
  const std::size_t frame_samples = fbank_.config().window_size();
  NdArray<float> samples({1, (span - 1) * hop_ + frame_samples}, 0.0f);
  // The recording followed by zeros, as log_mel pads it.
  const std::size_t sample_first = span_first * hop_;
  if (sample_first < samples_.size()) {
    const std::size_t available = std::min(samples.size(), samples_.size() - sample_first);
    std::memcpy(samples.data(), samples_.data() + sample_first, available * sizeof(float));
  }
  NdArray<float> own({count});
  NdArray<float> low({count});
  NdArray<float> high({count});
  for (std::size_t f = 0; f < count; ++f) {
    const std::size_t frame = first + f;
    const std::size_t lo = window_start(frame) - span_first;
    if (lo + width > span || frame - span_first >= span) {
      fail("shared trunk: frame {} and its window fall outside the pass's {} frames", frame, span);
    }
    own(f) = static_cast<float>(frame - span_first);
    low(f) = static_cast<float>(lo);
    high(f) = static_cast<float>(lo + width);
  }
  feature_frames_ += span;
  return extractor_.embed_pooled_from_samples_in_graph(samples, own, low, high, weights,
                                                       inv_weight_sums, inv_denominators,
                                                       valid_frames, PooledSessions::kOnePerShape);
}

std::size_t SharedTrunk::grid_frames(std::size_t phase) const {
  return phase < total_frames_ ? ceil_div(total_frames_ - phase, config_.time_stride) : 0;
}

SharedTrunk::Placement SharedTrunk::placement(std::size_t chunk) const {
  const std::size_t start =
      static_cast<std::size_t>(plan_.chunk_offset(static_cast<std::int64_t>(chunk))) / hop_;
  const std::size_t stride = config_.time_stride;
  Placement place;
  if (config_.exact_alignment) {
    place.phase = start % stride;
    place.first_grid = start / stride;
  } else {
    place.phase = 0;
    place.first_grid = (start + stride / 2) / stride;
  }
  if (place.first_grid + trunk_frames_per_chunk_ > grid_frames(place.phase)) {
    fail("shared trunk: chunk {} needs trunk frames past the end of the recording", chunk);
  }
  return place;
}

std::vector<NdArray<float>> SharedTrunk::run_passes(
    std::size_t phase, const std::vector<std::pair<std::size_t, std::size_t>>& ranges) {
  const std::size_t stride = config_.time_stride;
  const std::size_t margin_grid = config_.margin_frames / stride;
  const std::size_t bins = fbank_.config().num_mel_bins;
  struct Pass {
    std::size_t first = 0, last = 0, start_grid = 0, input_first = 0, input_frames = 0;
  };
  std::vector<Pass> passes;
  // Passes of equal input length run as one batch (ONNX Runtime spreads a batch over its
  // threads better than one long input); each item's arithmetic does not depend on the batch.
  std::map<std::size_t, std::vector<std::size_t>> by_length;
  for (const auto& [first, last] : ranges) {
    Pass pass;
    pass.first = first;
    pass.last = last;
    // The pass starts on the phase's grid, at the recording's start when the margin reaches
    // it: there the trunk pads exactly as it pads the first chunk in exact mode.
    pass.start_grid = first >= margin_grid ? first - margin_grid : 0;
    pass.input_first = phase + pass.start_grid * stride;
    const std::size_t input_last =
        std::min(phase + last * stride + config_.margin_frames, total_frames_);
    pass.input_frames = input_last - pass.input_first;
    by_length[pass.input_frames].push_back(passes.size());
    passes.push_back(pass);
  }
  std::vector<NdArray<float>> results(passes.size());
  for (const auto& [input_frames, members] : by_length) {
    const auto features_start = std::chrono::steady_clock::now();
    NdArray<float> batch({members.size(), input_frames, bins});
    for (std::size_t j = 0; j < members.size(); ++j) {
      const NdArray<float> features =
          centred_features(passes[members[j]].input_first, input_frames);
      std::memcpy(batch.data() + j * input_frames * bins, features.data(),
                  input_frames * bins * sizeof(float));
    }
    const auto trunk_start = std::chrono::steady_clock::now();
    feature_seconds_ += std::chrono::duration<double>(trunk_start - features_start).count();
    const NdArray<float> output = extractor_.trunk_frames_from_features(batch);
    trunk_seconds_ += seconds_since(trunk_start);
    trunk_passes_ += members.size();
    trunk_input_frames_ += members.size() * input_frames;
    largest_pass_frames_ = std::max(largest_pass_frames_, input_frames);
    const std::size_t pooled = output.dim(1);
    const std::size_t produced = output.dim(2);
    if (produced != ceil_div(input_frames, stride)) {
      fail(
          "shared trunk: the embedding model turned {} fbank frames into {} frames, not {} "
          "(time stride {}); use embedding_mode exact with this model",
          input_frames, produced, ceil_div(input_frames, stride), stride);
    }
    for (std::size_t j = 0; j < members.size(); ++j) {
      const Pass& pass = passes[members[j]];
      const std::size_t kept = pass.last - pass.first;
      const std::size_t offset = pass.first - pass.start_grid;
      NdArray<float> frames({pooled, kept});
      const float* item = output.data() + j * pooled * produced;
      for (std::size_t k = 0; k < pooled; ++k) {
        std::memcpy(frames.data() + k * kept, item + k * produced + offset, kept * sizeof(float));
      }
      results[members[j]] = std::move(frames);
    }
  }
  return results;
}

NdArray<float> SharedTrunk::run_pass(std::size_t phase, std::size_t first, std::size_t last) {
  return std::move(run_passes(phase, {{first, last}}).at(0));
}

NdArray<float> SharedTrunk::single_pass_frames(std::size_t phase, std::size_t first,
                                               std::size_t count) {
  if (count == 0 || first + count > grid_frames(phase)) {
    fail("shared trunk: grid frames [{}, {}) of phase {} are outside the recording", first,
         first + count, phase);
  }
  return run_pass(phase, first, first + count);
}

const SharedTrunk::Block& SharedTrunk::block(std::size_t phase, std::size_t index) {
  auto& phase_blocks = blocks_[phase];
  const auto found = phase_blocks.find(index);
  if (found != phase_blocks.end()) return found->second;
  // What the last pass and the threads around it freed would otherwise sit under this pass's
  // activations at the recording's peak (docs/corpus.md, "Memory").
  release_freed_heap();
  const std::size_t first = index * block_grid_frames_;
  const std::size_t last = std::min(first + block_grid_frames_, grid_frames(phase));
  // The block runs as a batch of passes of pass_frames each (plus margins).
  const std::size_t pass_grid = config_.pass_frames / config_.time_stride;
  std::vector<std::pair<std::size_t, std::size_t>> ranges;
  for (std::size_t grid = first; grid < last; grid += pass_grid) {
    ranges.emplace_back(grid, std::min(grid + pass_grid, last));
  }
  const std::vector<NdArray<float>> parts = run_passes(phase, ranges);
  const std::size_t pooled = parts.at(0).dim(0);
  Block computed;
  computed.first = first;
  computed.frames = NdArray<float>({pooled, last - first});
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::size_t width = parts[i].dim(1);
    const std::size_t column = ranges[i].first - first;
    for (std::size_t k = 0; k < pooled; ++k) {
      std::memcpy(computed.frames.data() + k * (last - first) + column, parts[i].data() + k * width,
                  width * sizeof(float));
    }
  }
  return phase_blocks.emplace(index, std::move(computed)).first->second;
}

void SharedTrunk::ensure_chunk_blocks(std::size_t chunk) {
  const Placement place = placement(chunk);
  const std::size_t first_block = place.first_grid / block_grid_frames_;
  const std::size_t last_block =
      (place.first_grid + trunk_frames_per_chunk_ - 1) / block_grid_frames_;
  for (std::size_t index = first_block; index <= last_block; ++index) block(place.phase, index);
}

std::size_t SharedTrunk::pooled_features() const {
  for (const auto& [phase, phase_blocks] : blocks_) {
    if (!phase_blocks.empty()) return phase_blocks.begin()->second.frames.dim(0);
  }
  fail("shared trunk: no block computed yet");
}

void SharedTrunk::copy_chunk_frames(std::size_t chunk, std::span<float> out) const {
  const Placement place = placement(chunk);
  const auto& phase_blocks = blocks_.at(place.phase);
  std::size_t done = 0;
  while (done < trunk_frames_per_chunk_) {
    const std::size_t grid = place.first_grid + done;
    const auto found = phase_blocks.find(grid / block_grid_frames_);
    if (found == phase_blocks.end()) fail("shared trunk: block for chunk {} not computed", chunk);
    const Block& source = found->second;
    const std::size_t pooled = source.frames.dim(0);
    const std::size_t kept = source.frames.dim(1);
    const std::size_t offset = grid - source.first;
    const std::size_t take = std::min(kept - offset, trunk_frames_per_chunk_ - done);
    for (std::size_t k = 0; k < pooled; ++k) {
      std::memcpy(out.data() + k * trunk_frames_per_chunk_ + done,
                  source.frames.data() + k * kept + offset, take * sizeof(float));
    }
    done += take;
  }
}

NdArray<float> SharedTrunk::chunk_frames(std::size_t chunk) {
  ensure_chunk_blocks(chunk);
  NdArray<float> frames({pooled_features(), trunk_frames_per_chunk_});
  copy_chunk_frames(chunk, frames.values());
  return frames;
}

std::size_t SharedTrunk::blocks_held() const {
  std::size_t held = 0;
  for (const auto& [phase, phase_blocks] : blocks_) held += phase_blocks.size();
  return held;
}

void SharedTrunk::release_blocks_before(std::size_t fbank_frame) {
  // Every later chunk starts at or after fbank_frame, so it needs no grid frame below
  // fbank_frame / stride - 1 in any phase or alignment.
  const std::size_t stride = config_.time_stride;
  const std::size_t needed_grid = fbank_frame / stride >= 1 ? fbank_frame / stride - 1 : 0;
  for (auto& [phase, phase_blocks] : blocks_) {
    for (auto it = phase_blocks.begin(); it != phase_blocks.end();) {
      if (it->second.first + it->second.frames.dim(1) <= needed_grid) {
        it = phase_blocks.erase(it);
      } else {
        ++it;
      }
    }
  }
}

NdArray<float> SharedTrunk::embed_chunks(std::size_t first_chunk,
                                         const NdArray<float>& range_segmentations) {
  if (range_segmentations.rank() != 3) {
    fail("shared trunk: segmentations must be [chunks, frames, speakers]");
  }
  const std::size_t count = range_segmentations.dim(0);
  if (first_chunk + count > static_cast<std::size_t>(plan_.num_chunks())) {
    fail("shared trunk: chunks [{}, {}) are outside the recording's {} chunks", first_chunk,
         first_chunk + count, plan_.num_chunks());
  }
  if (pool_in_graph_) return embed_chunks_in_graph(first_chunk, range_segmentations);
  release_blocks_before(
      static_cast<std::size_t>(plan_.chunk_offset(static_cast<std::int64_t>(first_chunk))) / hop_);
  const auto start = std::chrono::steady_clock::now();
  const double passes_before = feature_seconds_ + trunk_seconds_;
  NdArray<float> embeddings = extractor_.embed_chunks_with(
      range_segmentations, static_cast<std::size_t>(plan_.window_samples),
      [&](std::span<const std::size_t> chunks) {
        // Passes run here, one at a time; then the chunks' slices are copied out in parallel
        // (on a GPU these copies, done serially, took longer than the trunk itself).
        for (const std::size_t chunk : chunks) ensure_chunk_blocks(first_chunk + chunk);
        const std::size_t per_chunk = pooled_features() * trunk_frames_per_chunk_;
        NdArray<float> batch({chunks.size(), pooled_features(), trunk_frames_per_chunk_});
        parallel_for(chunks.size(), config_.threads, [&](std::size_t i) {
          copy_chunk_frames(first_chunk + chunks[i],
                            std::span<float>(batch.data() + i * per_chunk, per_chunk));
        });
        return batch;
      });
  // Passes run lazily inside the call; what is left is pooling.
  pooling_seconds_ += seconds_since(start) - (feature_seconds_ + trunk_seconds_ - passes_before);
  return embeddings;
}

NdArray<float> SharedTrunk::embed_chunks_in_graph(std::size_t first_chunk,
                                                  const NdArray<float>& range_segmentations) {
  const std::size_t count = range_segmentations.dim(0);
  const std::size_t frames = range_segmentations.dim(1);
  const std::size_t speakers = range_segmentations.dim(2);
  const EmbeddingConfig& embedding = extractor_.config();
  const auto preparation_start = std::chrono::steady_clock::now();
  const NdArray<float> masks =
      select_embedding_masks(range_segmentations, embedding.exclude_overlap,
                             min_clean_frames(frames, embedding.min_num_samples,
                                              static_cast<std::size_t>(plan_.window_samples)));
  const std::vector<std::size_t> sources = nearest_source_indices(frames, trunk_frames_per_chunk_);
  pooling_seconds_ += seconds_since(preparation_start);
  NdArray<float> embeddings({count, speakers, extractor_.dimension()});
  const GraphPass& whole = graph_passes_.back();
  for (std::size_t range_first = 0; range_first < count;) {
    const std::size_t remaining = count - range_first;
    // Whole passes, then the rest in the shortest pass that holds it (runtime::plan_batches
    // plans the same calls from pooled_pass_chunks, so the placement looks up these shapes).
    const GraphPass& pass = remaining >= whole.chunks
                                ? whole
                                : *std::find_if(graph_passes_.begin(), graph_passes_.end(),
                                                [&](const GraphPass& candidate) {
                                                  return candidate.chunks >= remaining;
                                                });
    const std::size_t range_count = std::min(pass.chunks, remaining);
    embed_graph_pass(pass, first_chunk, range_first, range_count, masks, sources, embeddings);
    range_first += range_count;
  }
  return embeddings;
}

void SharedTrunk::embed_graph_pass(const GraphPass& pass, std::size_t first_chunk,
                                   std::size_t range_first, std::size_t range_count,
                                   const NdArray<float>& masks,
                                   std::span<const std::size_t> sources,
                                   NdArray<float>& embeddings) {
  const std::size_t frames = masks.dim(2);
  const std::size_t speakers = masks.dim(1);
  const std::size_t dimension = extractor_.dimension();
  const std::size_t bins = fbank_.config().num_mel_bins;
  const std::size_t stride = config_.time_stride;
  const std::size_t margin_grid = config_.margin_frames / stride;
  const std::size_t pass_grid = pass.grid_frames;
  const std::size_t pairs = pass.chunks * speakers;
  const std::vector<float>& empty = extractor_.empty_pair_embedding();
  const std::vector<float>& bias = extractor_.split().head.bias;

  const auto preparation_start = std::chrono::steady_clock::now();
  // The pass starts a margin before the range's first chunk, at the recording's start when
  // that is earlier (where the trunk pads as in the other modes), and never later than one
  // pass before the recording's end: a pass only runs past the end by under one trunk frame,
  // or when the whole recording is shorter than a pass. There the graph masks the frames past
  // the end (valid_frames), so its trunk pads with zeros as host pooling's does.
  const std::size_t first_grid = placement(first_chunk + range_first).first_grid;
  const std::size_t last_start =
      std::max<std::size_t>(ceil_div(total_frames_, stride), pass_grid) - pass_grid;
  const std::size_t start_grid =
      std::min(first_grid >= margin_grid ? first_grid - margin_grid : 0, last_start);
  NdArray<float> weights({1, pairs, pass_grid});
  NdArray<float> inv_weight_sums({1, pairs, 1});
  NdArray<float> inv_denominators({1, pairs, 1});
  std::vector<char> pooled(range_count * speakers, 0);
  bool any_pooled = false;
  for (std::size_t i = 0; i < range_count; ++i) {
    const std::size_t chunk = range_first + i;
    const float* chunk_masks = masks.data() + chunk * speakers * frames;
    const bool chunk_active = std::any_of(chunk_masks, chunk_masks + speakers * frames,
                                          [](float value) { return value != 0.0f; });
    const std::size_t column = placement(first_chunk + chunk).first_grid - start_grid;
    if (column + trunk_frames_per_chunk_ > pass_grid) {
      fail("shared trunk: chunk {} does not fit its pass of {} trunk frames", first_chunk + chunk,
           pass_grid);
    }
    for (std::size_t s = 0; s < speakers; ++s) {
      float* out = embeddings.data() + (chunk * speakers + s) * dimension;
      // As stages/embedding.cpp: a silent chunk gets the layer's bias, a silent speaker of
      // an active chunk the layer on empty statistics.
      std::copy_n(chunk_active ? empty.data() : bias.data(), dimension, out);
      if (!chunk_active) continue;
      const std::size_t row = i * speakers + s;
      const PairWeights pair = resample_pair_weights(
          std::span<const float>(chunk_masks + s * frames, frames), sources,
          std::span<float>(weights.data() + row * pass_grid + column, trunk_frames_per_chunk_));
      if (pair.weighted_frames == 0) continue;
      inv_weight_sums(0, row, 0) = pair.inv_weight_sum;
      inv_denominators(0, row, 0) = pair.inv_variance_denominator;
      pooled[row] = 1;
      any_pooled = true;
    }
  }
  // The padded recording's frames from the pass's start.
  const NdArray<float> valid_frames(
      {1}, static_cast<float>(std::min(total_frames_ - start_grid * stride, pass_grid * stride)));
  pooling_seconds_ += seconds_since(preparation_start);
  if (!any_pooled) return;
  NdArray<float> pass_embeddings;
  if (features_in_graph_) {
    const auto trunk_start = std::chrono::steady_clock::now();
    pass_embeddings = embed_pass_from_samples(start_grid * stride, pass_grid * stride, weights,
                                              inv_weight_sums, inv_denominators, valid_frames);
    trunk_seconds_ += seconds_since(trunk_start);
  } else {
    const auto features_start = std::chrono::steady_clock::now();
    NdArray<float> features = centred_features(start_grid * stride, pass_grid * stride);
    features = NdArray<float>({1, pass_grid * stride, bins}, std::move(features.values()));
    const auto trunk_start = std::chrono::steady_clock::now();
    feature_seconds_ += std::chrono::duration<double>(trunk_start - features_start).count();
    pass_embeddings =
        extractor_.embed_pooled_in_graph(features, weights, inv_weight_sums, inv_denominators,
                                         valid_frames, PooledSessions::kOnePerShape);
    trunk_seconds_ += seconds_since(trunk_start);
  }
  ++trunk_passes_;
  ++graph_passes_by_chunks_[pass.chunks];
  trunk_input_frames_ += pass_grid * stride;
  largest_pass_frames_ = std::max(largest_pass_frames_, pass_grid * stride);
  if (pass_embeddings.size() != pairs * dimension) {
    fail("shared trunk: the pooled graph returned {} values for {} pairs of {}",
         pass_embeddings.size(), pairs, dimension);
  }
  for (std::size_t row = 0; row < range_count * speakers; ++row) {
    if (pooled[row] == 0) continue;
    std::copy_n(pass_embeddings.data() + row * dimension, dimension,
                embeddings.data() + (range_first * speakers + row) * dimension);
  }
}

}  // namespace parley::stages
