#include "stages/embedding.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/parallel_for.h"
#include "graph/float16_graph.h"
#include "graph/pooled_trunk_graph.h"
#include "runtime/compile_cache.h"
#include "runtime/provider.h"
#include "stages/embedding_graphs.h"
#include "stages/stats_pooling.h"

namespace parley::stages {
namespace {

// The rows `indices` (axis 0) of `array`, in that order.
NdArray<float> rows_of(const NdArray<float>& array, std::span<const std::size_t> indices) {
  std::vector<std::size_t> shape = array.shape();
  const std::size_t row = array.size() / std::max<std::size_t>(shape.at(0), 1);
  shape[0] = indices.size();
  NdArray<float> rows(shape);
  for (std::size_t i = 0; i < indices.size(); ++i) {
    std::memcpy(rows.data() + i * row, array.data() + indices[i] * row, row * sizeof(float));
  }
  return rows;
}

}  // namespace

void EmbeddingConfig::validate() const {
  if (batch_size < 1) fail("embedding config: batch_size must be at least 1 (got 0)");
  if (feature_threads < 1) {
    fail("embedding config: feature_threads must be at least 1 (got {})", feature_threads);
  }
  if (min_num_samples < 1) fail("embedding config: min_num_samples must be at least 1 (got 0)");
  if (!(variance_epsilon >= 0.0)) {
    fail("embedding config: variance_epsilon must be >= 0 (got {})", variance_epsilon);
  }
  fbank.validate();
  session.validate();
  if (capture_pooled_graph) {
    runtime::check_graph_capture(session.provider, "embedding config: capture_pooled_graph",
                                 "the embedding model");
  }
  if (trunk_float16 && !graph::float16_graph_suits(session.provider)) {
    fail(
        "embedding config: trunk_float16 runs on a dynamic-shape GPU provider such as cuda (got "
        "{}); a static-shape provider has its own float16 option (docs/providers.md)",
        runtime::provider_name(session.provider));
  }
}

std::string EmbeddingConfig::to_string() const {
  return fmt::format(
      "EmbeddingConfig(batch_size={}, exclude_overlap={}, min_num_samples={}, "
      "variance_epsilon={}, fbank={}, feature_threads={}, session={}{})",
      batch_size, exclude_overlap, min_num_samples, variance_epsilon, fbank.to_string(),
      feature_threads, session.to_string(),
      capture_pooled_graph ? ", capture_pooled_graph=true" : "");
}

std::size_t min_clean_frames(std::size_t frames_per_chunk, std::size_t min_num_samples,
                             std::size_t samples_per_chunk) {
  if (samples_per_chunk == 0) fail("embedding: chunks have no samples");
  // math.ceil(num_frames * min_num_samples / num_samples), in double as Python computes it.
  return static_cast<std::size_t>(
      std::ceil(static_cast<double>(frames_per_chunk) * static_cast<double>(min_num_samples) /
                static_cast<double>(samples_per_chunk)));
}

NdArray<float> select_embedding_masks(const NdArray<float>& binarized_segmentations,
                                      bool exclude_overlap, std::size_t min_clean_frames) {
  if (binarized_segmentations.rank() != 3) {
    fail("embedding: segmentations must be [chunks, frames, speakers], got rank {}",
         binarized_segmentations.rank());
  }
  const std::size_t chunks = binarized_segmentations.dim(0);
  const std::size_t frames = binarized_segmentations.dim(1);
  const std::size_t speakers = binarized_segmentations.dim(2);
  NdArray<float> masks({chunks, speakers, frames});
  std::vector<float> clean(frames);
  for (std::size_t c = 0; c < chunks; ++c) {
    for (std::size_t f = 0; f < frames; ++f) {
      // numpy: a NaN makes the frame's sum NaN and `NaN < 2` false, so the frame is not clean.
      float active = 0.0f;
      for (std::size_t s = 0; s < speakers; ++s) active += binarized_segmentations(c, f, s);
      clean[f] = active < 2.0f ? 1.0f : 0.0f;
    }
    for (std::size_t s = 0; s < speakers; ++s) {
      float* mask = masks.data() + (c * speakers + s) * frames;
      double clean_sum = 0.0;
      for (std::size_t f = 0; f < frames; ++f) {
        const float value = binarized_segmentations(c, f, s);
        mask[f] = std::isnan(value) ? 0.0f : value;
        clean_sum += mask[f] * clean[f];
      }
      // pyannote: `if np.sum(clean_mask) > min_num_frames: used_mask = clean_mask`.
      if (exclude_overlap && clean_sum > static_cast<double>(min_clean_frames)) {
        for (std::size_t f = 0; f < frames; ++f) mask[f] *= clean[f];
      }
    }
  }
  return masks;
}

EmbeddingExtractor::EmbeddingExtractor(const std::filesystem::path& model_path,
                                       const EmbeddingConfig& config,
                                       std::shared_ptr<runtime::SessionShare> sessions)
    : EmbeddingExtractor(graph::read_model_bytes(model_path), model_path.string(), config,
                         std::move(sessions)) {}

EmbeddingExtractor::EmbeddingExtractor(const std::string& model_bytes,
                                       const std::string& model_name, const EmbeddingConfig& config,
                                       std::shared_ptr<runtime::SessionShare> sessions)
    : config_(config),
      model_name_(model_name),
      fbank_(config.fbank),
      sessions_(sessions ? std::move(sessions) : std::make_shared<runtime::SessionShare>()) {
  config_.validate();
  split_ = graph::split_before_statistics_pooling(model_bytes, model_name);
  if (config_.trunk_float16) {
    split_.trunk_model = graph::convert_to_float16(split_.trunk_model, model_name).model;
  }
  std::string input_name;
  std::vector<std::int64_t> input_dims;
  if (config_.batch_buckets || runtime::traits(config_.session.provider).static_shapes) {
    // One compiled graph per shape: the trunk is opened from a file under its digest, where
    // `parley warm-cache` compiled it and the placement looked for it.
    compile_cache_root_ = runtime::CompileCache::root_or_default(config_.compile_cache_root);
    shaped_sessions_ =
        std::make_unique<runtime::ShapedSessionPool>(compile_cache_root_, config_.session);
    trunk_buckets_ =
        config_.batch_buckets.value_or(runtime::Buckets::powers_of_two(config_.batch_size));
    trunk_graph_ = std::make_unique<EmbeddingGraph>(
        trunk_graph(split_, model_name, derived_models_directory(compile_cache_root_)));
    if (trunk_graph_->inputs.size() == 1) {
      input_name = trunk_graph_->inputs.front().name;
      input_dims = trunk_graph_->inputs.front().dims;
    }
  } else {
    trunk_ = sessions_->open(
        runtime::ModelBuffer{split_.trunk_model, model_name + " (trunk before pooling)"},
        config_.session);
    input_name = trunk_->inputs().at(0).name;
    input_dims = trunk_->inputs().at(0).shape;
  }
  if (input_dims.size() != 3 || (input_dims[2] >= 0 && static_cast<std::size_t>(input_dims[2]) !=
                                                           config_.fbank.num_mel_bins)) {
    fail("{}: input '{}' [{}] is not [batch, frames, {}] fbank features", model_name, input_name,
         fmt::join(input_dims, ","), config_.fbank.num_mel_bins);
  }
  const std::size_t stats_dim = split_.head.input_dim();
  NdArray<float> empty_stats({1, stats_dim});
  const auto empty_std = static_cast<float>(std::sqrt(config_.variance_epsilon));
  for (std::size_t k = stats_dim / 2; k < stats_dim; ++k) empty_stats(0, k) = empty_std;
  empty_pair_embedding_ = linear_layer(empty_stats).values();
}

const graph::TimeReceptiveField& EmbeddingExtractor::trunk_receptive_field() const {
  if (!receptive_field_) {
    receptive_field_ = graph::time_receptive_field(split_.trunk_model, model_name_ + " (trunk)",
                                                   split_.features_input, 1, split_.pooling_input);
  }
  return *receptive_field_;
}

namespace {

using NamedInputs = std::vector<std::pair<std::string, const NdArray<float>*>>;

std::vector<runtime::InputShape> shapes_of(const NamedInputs& inputs) {
  std::vector<runtime::InputShape> shapes;
  for (const auto& [name, array] : inputs) {
    std::vector<std::int64_t> dims;
    for (const std::size_t dim : array->shape()) dims.push_back(static_cast<std::int64_t>(dim));
    shapes.push_back({name, std::move(dims)});
  }
  return shapes;
}

}  // namespace

NdArray<float> EmbeddingExtractor::embed_pooled_in_graph(
    const NdArray<float>& features, const NdArray<float>& pair_weights,
    const NdArray<float>& inv_weight_sums, const NdArray<float>& inv_variance_denominators,
    const NdArray<float>& valid_frames, PooledSessions sessions) {
  using Names = graph::PooledTrunkGraphNames;
  const NamedInputs inputs = {{Names::kFeatures, &features},
                              {Names::kPairWeights, &pair_weights},
                              {Names::kInvWeightSums, &inv_weight_sums},
                              {Names::kInvVarianceDenominators, &inv_variance_denominators},
                              {Names::kValidFrames, &valid_frames}};
  if (opens_per_shape()) {
    if (!pooled_graph_) {
      pooled_graph_ = std::make_unique<EmbeddingGraph>(
          pooled_trunk_graph(split_, model_name_, derived_models_directory(compile_cache_root_),
                             config_.variance_epsilon));
    }
    return session_for(*pooled_graph_, shapes_of(inputs)).run(inputs, {Names::kEmbeddings}).at(0);
  }
  if (sessions == PooledSessions::kOnePerShape) {
    return pass_session(/*features_in_graph=*/false, shapes_of(inputs))
        .run(inputs, {Names::kEmbeddings})
        .at(0);
  }
  open_pooled_session();
  return pooled_->run(inputs, {Names::kEmbeddings}).at(0);
}

NdArray<float> EmbeddingExtractor::embed_pooled_from_samples_in_graph(
    const NdArray<float>& samples, const NdArray<float>& frame_index,
    const NdArray<float>& window_low, const NdArray<float>& window_high,
    const NdArray<float>& pair_weights, const NdArray<float>& inv_weight_sums,
    const NdArray<float>& inv_variance_denominators, const NdArray<float>& valid_frames,
    PooledSessions sessions) {
  using Names = graph::PooledTrunkGraphNames;
  using FbankNames = graph::FbankGraphNames;
  if (opens_per_shape()) {
    fail("{}: features in the graph need a provider that takes any shape", model_name_);
  }
  const NamedInputs inputs = {{FbankNames::kSamples, &samples},
                              {FbankNames::kFrameIndex, &frame_index},
                              {FbankNames::kWindowLow, &window_low},
                              {FbankNames::kWindowHigh, &window_high},
                              {Names::kPairWeights, &pair_weights},
                              {Names::kInvWeightSums, &inv_weight_sums},
                              {Names::kInvVarianceDenominators, &inv_variance_denominators},
                              {Names::kValidFrames, &valid_frames}};
  if (sessions == PooledSessions::kOnePerShape) {
    return pass_session(/*features_in_graph=*/true, shapes_of(inputs))
        .run(inputs, {Names::kEmbeddings})
        .at(0);
  }
  open_pooled_session(/*features_in_graph=*/true);
  return pooled_with_fbank_->run(inputs, {Names::kEmbeddings}).at(0);
}

std::string EmbeddingExtractor::pooled_model(bool features_in_graph) const {
  std::string model =
      graph::build_pooled_trunk_model(split_, model_name_, config_.variance_epsilon);
  if (!features_in_graph) return model;
  return graph::prepend_fbank(model, graph::PooledTrunkGraphNames::kFeatures, fbank_.graph_spec(),
                              model_name_);
}

void EmbeddingExtractor::open_pooled_session(
    bool features_in_graph, const std::vector<std::vector<runtime::InputShape>>& pass_shapes) {
  if (opens_per_shape()) return;
  runtime::SessionConfig session = config_.session;
  session.capture_graph = config_.capture_pooled_graph;
  const std::string name =
      model_name_ + (features_in_graph ? " (fbank, trunk and pooling)" : " (trunk with pooling)");
  if (!pass_shapes.empty()) {
    // The model is built once for all the shapes; ONNX Runtime keeps its own copy in each session,
    // so the bytes are not needed past creation.
    std::optional<std::string> model;
    for (const auto& shapes : pass_shapes) {
      const bool opened =
          std::any_of(pass_sessions_.begin(), pass_sessions_.end(), [&](const PassSession& pass) {
            return pass.features_in_graph == features_in_graph && pass.shapes == shapes;
          });
      if (opened) continue;
      if (!model) model = pooled_model(features_in_graph);
      // The shapes are part of the settings: the share (engines on one GPU) keeps a session per
      // shape, each run by every engine, instead of one for all shapes.
      session.static_shapes = shapes;
      pass_sessions_.push_back({features_in_graph, shapes,
                                sessions_->open(runtime::ModelBuffer{*model, name}, session), 0});
    }
    return;
  }
  std::shared_ptr<runtime::OnnxSession>& target = features_in_graph ? pooled_with_fbank_ : pooled_;
  if (target) return;
  // ONNX Runtime keeps its own copy of the model: the bytes are not needed past creation.
  target = sessions_->open(runtime::ModelBuffer{pooled_model(features_in_graph), name}, session);
}

runtime::OnnxSession& EmbeddingExtractor::pass_session(
    bool features_in_graph, const std::vector<runtime::InputShape>& shapes) {
  const auto matches = [&](const PassSession& pass) {
    return pass.features_in_graph == features_in_graph && pass.shapes == shapes;
  };
  auto found = std::find_if(pass_sessions_.begin(), pass_sessions_.end(), matches);
  if (found == pass_sessions_.end()) {
    open_pooled_session(features_in_graph, {shapes});
    found = std::find_if(pass_sessions_.begin(), pass_sessions_.end(), matches);
  }
  ++found->runs;
  return *found->session;
}

std::vector<EmbeddingExtractor::PassSessionUse> EmbeddingExtractor::pass_sessions() const {
  std::vector<PassSessionUse> uses;
  for (const PassSession& pass : pass_sessions_) {
    uses.push_back({pass.shapes, pass.session.get(), pass.runs});
  }
  return uses;
}

runtime::OnnxSession& EmbeddingExtractor::session_for(
    const EmbeddingGraph& graph, const std::vector<runtime::InputShape>& shapes) {
  return shaped_sessions_->session_for({graph.model, graph.sha256, model_name_ + " " + graph.label},
                                       shapes, runtime::dimension_overrides(graph.inputs, shapes));
}

const std::vector<std::vector<runtime::InputShape>>& EmbeddingExtractor::opened_shapes() const {
  static const std::vector<std::vector<runtime::InputShape>> kNone;
  return shaped_sessions_ ? shaped_sessions_->opened_shapes() : kNone;
}

NdArray<float> EmbeddingExtractor::run_trunk(const NdArray<float>& feats) {
  if (!opens_per_shape()) {
    return trunk_->run({{split_.features_input, &feats}}, {split_.pooling_input}).at(0);
  }
  const std::size_t items = feats.dim(0);
  const std::vector<runtime::BatchSlice> plan = runtime::plan_batches(items, *trunk_buckets_);
  if (plan.empty()) fail("embedding: no features to run the trunk on");
  NdArray<float> all_outputs;
  for (const auto& slice : plan) {
    // Padding rows are zeros; the trunk treats batch items independently, so they change no
    // real row.
    const NdArray<float> batch = runtime::gather_batch(feats, slice);
    runtime::OnnxSession& session = session_for(
        *trunk_graph_, trunk_input_shapes(*trunk_graph_, slice.bucket, feats.dim(1), feats.dim(2)));
    const NdArray<float> output =
        session.run({{split_.features_input, &batch}}, {split_.pooling_input}).at(0);
    if (output.rank() == 0 || output.dim(0) != slice.bucket) {
      fail("{}: the trunk returned [{}] for a batch of {}", model_name_,
           fmt::join(output.shape(), ","), slice.bucket);
    }
    if (all_outputs.rank() == 0) {
      std::vector<std::size_t> shape = output.shape();
      shape[0] = items;
      all_outputs = NdArray<float>(shape);
    }
    runtime::scatter_batch(output, slice, all_outputs, model_name_);
  }
  return all_outputs;
}

EmbeddingExtractor::~EmbeddingExtractor() = default;

NdArray<float> EmbeddingExtractor::features(const NdArray<float>& waveforms) const {
  if (waveforms.rank() != 2) {
    fail("embedding: waveforms must be [batch, samples], got rank {}", waveforms.rank());
  }
  const std::size_t batch = waveforms.dim(0);
  const std::size_t samples = waveforms.dim(1);
  const std::size_t frames = fbank_.num_frames(samples);
  if (samples < config_.min_num_samples || frames == 0) {
    fail(
        "embedding: waveforms of {} samples are shorter than the {} samples one embedding "
        "needs (one {} ms fbank frame)",
        samples, std::max(config_.min_num_samples, config_.fbank.window_size()),
        config_.fbank.frame_length_ms);
  }
  const std::size_t bins = config_.fbank.num_mel_bins;
  NdArray<float> features({batch, frames, bins});
  // One chunk per task: each chunk's features are computed alone, whatever the thread count.
  parallel_for(batch, config_.feature_threads, [&](std::size_t b) {
    fbank_.compute_into(std::span<const float>(waveforms.data() + b * samples, samples),
                        std::span<float>(features.data() + b * frames * bins, frames * bins));
  });
  return features;
}

NdArray<float> EmbeddingExtractor::trunk_frames(const NdArray<float>& waveforms) {
  return trunk_frames_from_features(features(waveforms));
}

NdArray<float> EmbeddingExtractor::trunk_frames_from_features(const NdArray<float>& feats) {
  if (feats.rank() != 3 || feats.dim(2) != config_.fbank.num_mel_bins) {
    fail("embedding: features must be [batch, frames, {}]", config_.fbank.num_mel_bins);
  }
  NdArray<float> output = run_trunk(feats);
  const std::size_t rank = output.rank();
  const auto rank_signed = static_cast<std::int64_t>(rank);
  if (rank < 3 || (split_.time_axis != -1 && split_.time_axis != rank_signed - 1)) {
    fail(
        "{}: pooling input '{}' has rank {} and is pooled over axis {}; parley expects time "
        "as the last axis of a [B, C, F, T] or [B, C*F, T] tensor",
        model_name_, split_.pooling_input, rank, split_.time_axis);
  }
  const std::size_t batch = output.dim(0);
  const std::size_t time = output.dim(rank - 1);
  const std::size_t pooled_features = output.size() / std::max<std::size_t>(batch * time, 1);
  if (2 * pooled_features != split_.head.input_dim()) {
    fail(
        "{}: the trunk yields {} features per frame, but the final linear layer takes {} "
        "statistics (expected twice as many)",
        model_name_, pooled_features, split_.head.input_dim());
  }
  return NdArray<float>({batch, pooled_features, time}, std::move(output.values()));
}

NdArray<float> EmbeddingExtractor::embed_frames(const NdArray<float>& frames,
                                                const NdArray<float>& weights) const {
  if (frames.rank() != 3 || weights.rank() != 3 || weights.dim(0) != frames.dim(0)) {
    fail(
        "embedding: frames [batch, features, time] and weights [batch, speakers, frames] do "
        "not match");
  }
  const std::size_t batch = frames.dim(0);
  const std::size_t pooled_features = frames.dim(1);
  const std::size_t time = frames.dim(2);
  const std::size_t speakers = weights.dim(1);
  const std::size_t weight_frames = weights.dim(2);
  const std::size_t stats_dim = 2 * pooled_features;
  if (stats_dim != split_.head.input_dim()) {
    fail("{}: {} pooled features do not fit the final linear layer over {} statistics", model_name_,
         pooled_features, split_.head.input_dim());
  }
  const auto sources = nearest_source_indices(weight_frames, time);
  NdArray<float> stats({batch * speakers, stats_dim});
  // Each (chunk, speaker) pair writes only its own row, so any thread count gives the same
  // statistics. On a GPU this loop, not the trunk, bounded the embedding stage.
  parallel_for(batch * speakers, config_.feature_threads, [&](std::size_t pair) {
    const std::size_t b = pair / speakers;
    const std::span<const float> batch_frames(frames.data() + b * pooled_features * time,
                                              pooled_features * time);
    const float* weight = weights.data() + pair * weight_frames;
    std::vector<float> resampled(time);
    for (std::size_t t = 0; t < time; ++t) resampled[t] = weight[sources[t]];
    weighted_statistics(batch_frames, pooled_features, time, resampled, config_.variance_epsilon,
                        std::span<float>(stats.data() + pair * stats_dim, stats_dim));
  });

  NdArray<float> embeddings = linear_layer(stats);
  return NdArray<float>({batch, speakers, split_.head.output_dim()},
                        std::move(embeddings.values()));
}

NdArray<float> EmbeddingExtractor::linear_layer(const NdArray<float>& stats) const {
  using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const std::size_t rows = stats.dim(0);
  const std::size_t stats_dim = split_.head.input_dim();
  const std::size_t dimension = split_.head.output_dim();
  NdArray<float> embeddings({rows, dimension});
  const Eigen::Map<const RowMajor> stats_matrix(stats.data(), static_cast<Eigen::Index>(rows),
                                                static_cast<Eigen::Index>(stats_dim));
  const Eigen::Map<const RowMajor> weight_matrix(split_.head.weight.data(),
                                                 static_cast<Eigen::Index>(dimension),
                                                 static_cast<Eigen::Index>(stats_dim));
  const Eigen::Map<const Eigen::RowVectorXf> bias(split_.head.bias.data(),
                                                  static_cast<Eigen::Index>(dimension));
  Eigen::Map<RowMajor> output(embeddings.data(), static_cast<Eigen::Index>(rows),
                              static_cast<Eigen::Index>(dimension));
  output.noalias() = stats_matrix * weight_matrix.transpose();
  output.rowwise() += bias;
  return embeddings;
}

NdArray<float> EmbeddingExtractor::embed(const NdArray<float>& waveforms,
                                         const NdArray<float>& weights) {
  return embed_frames(trunk_frames(waveforms), weights);
}

NdArray<float> EmbeddingExtractor::embed_chunks(const NdArray<float>& chunk_waveforms,
                                                const NdArray<float>& binarized_segmentations) {
  if (chunk_waveforms.rank() != 2 || binarized_segmentations.rank() != 3 ||
      chunk_waveforms.dim(0) != binarized_segmentations.dim(0)) {
    fail(
        "embedding: chunk waveforms [chunks, samples] and segmentations [chunks, frames, "
        "speakers] do not match");
  }
  if (pools_exact_in_graph()) return embed_chunks_pooled(chunk_waveforms, binarized_segmentations);
  const std::size_t samples = chunk_waveforms.dim(1);
  return embed_chunks_with(binarized_segmentations, samples,
                           [&](std::span<const std::size_t> chunks) {
                             return trunk_frames(rows_of(chunk_waveforms, chunks));
                           });
}

NdArray<float> EmbeddingExtractor::embed_chunks_with(const NdArray<float>& binarized_segmentations,
                                                     std::size_t samples_per_chunk,
                                                     const ChunkFrames& frames_of) {
  return embed_active_chunks(
      binarized_segmentations, samples_per_chunk,
      [&](std::span<const std::size_t> chunks, const NdArray<float>& weights) {
        const NdArray<float> trunk = frames_of(chunks);
        if (trunk.rank() != 3 || trunk.dim(0) != chunks.size()) {
          fail("{}: the trunk frames of {} chunks came back as [{}], not [{}, features, time]",
               model_name_, chunks.size(), fmt::join(trunk.shape(), ","), chunks.size());
        }
        return embed_frames(trunk, weights);
      });
}

bool EmbeddingExtractor::pools_exact_in_graph() const {
  const bool wanted = config_.pool_exact_in_graph.value_or(
      config_.session.provider != runtime::ProviderId::kCpu && !opens_per_shape());
  return wanted && can_pool_in_graph() &&
         trunk_receptive_field().kind == graph::TimeReceptiveField::Kind::kLocal;
}

NdArray<float> EmbeddingExtractor::embed_chunks_pooled(const NdArray<float>& chunk_waveforms,
                                                       const NdArray<float>& segmentations) {
  const std::size_t samples = chunk_waveforms.dim(1);
  const std::size_t frames = segmentations.dim(1);
  const std::size_t speakers = segmentations.dim(2);
  const auto stride = static_cast<std::size_t>(trunk_receptive_field().stride);
  return embed_active_chunks(
      segmentations, samples,
      [&](std::span<const std::size_t> chunks, const NdArray<float>& masks) {
        const std::size_t count = chunks.size();
        const NdArray<float> feats = features(rows_of(chunk_waveforms, chunks));
        // The trunk keeps one frame in `stride` of its "same"-padded input.
        const std::size_t time = (feats.dim(1) + stride - 1) / stride;
        const std::vector<std::size_t> sources = nearest_source_indices(frames, time);
        NdArray<float> weights({count, speakers, time});
        NdArray<float> inv_weight_sums({count, speakers, 1});
        NdArray<float> inv_denominators({count, speakers, 1});
        std::vector<char> pooled(count * speakers, 0);
        for (std::size_t pair = 0; pair < count * speakers; ++pair) {
          const PairWeights weighted =
              resample_pair_weights(std::span<const float>(masks.data() + pair * frames, frames),
                                    sources, std::span<float>(weights.data() + pair * time, time));
          inv_weight_sums(pair) = weighted.inv_weight_sum;
          inv_denominators(pair) = weighted.inv_variance_denominator;
          pooled[pair] = weighted.weighted_frames > 0 ? 1 : 0;
        }
        // Every chunk's features hold audio (the last chunk's padding is part of the chunk).
        const NdArray<float> valid_frames({count}, static_cast<float>(feats.dim(1)));
        NdArray<float> embeddings =
            embed_pooled_in_graph(feats, weights, inv_weight_sums, inv_denominators, valid_frames);
        if (embeddings.size() != count * speakers * dimension()) {
          fail("{}: the pooled graph returned {} values for {} pairs", model_name_,
               embeddings.size(), count * speakers);
        }
        // As host pooling: a speaker of an active chunk with nothing to pool gets the layer on
        // empty statistics.
        for (std::size_t pair = 0; pair < count * speakers; ++pair) {
          if (pooled[pair] == 0) {
            std::copy(empty_pair_embedding_.begin(), empty_pair_embedding_.end(),
                      embeddings.data() + pair * dimension());
          }
        }
        return NdArray<float>({count, speakers, dimension()}, std::move(embeddings.values()));
      });
}

NdArray<float> EmbeddingExtractor::embed_active_chunks(
    const NdArray<float>& binarized_segmentations, std::size_t samples_per_chunk,
    const BatchEmbedder& embed_batch) {
  if (binarized_segmentations.rank() != 3) {
    fail("embedding: segmentations must be [chunks, frames, speakers], got rank {}",
         binarized_segmentations.rank());
  }
  const std::size_t chunks = binarized_segmentations.dim(0);
  const std::size_t frames = binarized_segmentations.dim(1);
  const std::size_t speakers = binarized_segmentations.dim(2);
  const std::size_t dimension = this->dimension();
  const NdArray<float> masks =
      select_embedding_masks(binarized_segmentations, config_.exclude_overlap,
                             min_clean_frames(frames, config_.min_num_samples, samples_per_chunk));

  NdArray<float> embeddings({chunks, speakers, dimension});
  std::vector<std::size_t> active_chunks;
  for (std::size_t c = 0; c < chunks; ++c) {
    const float* chunk_masks = masks.data() + c * speakers * frames;
    if (std::any_of(chunk_masks, chunk_masks + speakers * frames,
                    [](float value) { return value != 0.0f; })) {
      active_chunks.push_back(c);
    } else {
      for (std::size_t s = 0; s < speakers; ++s) {
        std::copy(split_.head.bias.begin(), split_.head.bias.end(),
                  embeddings.data() + (c * speakers + s) * dimension);
      }
    }
  }

  for (std::size_t first = 0; first < active_chunks.size(); first += config_.batch_size) {
    const std::size_t count = std::min(config_.batch_size, active_chunks.size() - first);
    const std::span<const std::size_t> batch_chunks(active_chunks.data() + first, count);
    const NdArray<float> batch_embeddings = embed_batch(batch_chunks, rows_of(masks, batch_chunks));
    for (std::size_t i = 0; i < count; ++i) {
      std::memcpy(embeddings.data() + batch_chunks[i] * speakers * dimension,
                  batch_embeddings.data() + i * speakers * dimension,
                  speakers * dimension * sizeof(float));
    }
  }
  return embeddings;
}

}  // namespace parley::stages
