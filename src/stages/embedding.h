#pragma once
// Speaker embeddings per (chunk, local speaker), as pyannote.audio 4.x computes them for
// speaker-diarization-community-1 (SpeakerDiarization.get_embeddings with
// embedding_exclude_overlap=true, WeSpeakerResNet34.forward(waveforms, weights=masks)):
//   fbank (stages/fbank.h) -> ResNet trunk (ONNX Runtime, the model cut before its pooling by
//   graph/onnx_graph.h) -> statistics pooling weighted by the speaker's mask
//   (stages/stats_pooling.h) -> final linear layer -> [256].
// The trunk does not depend on the mask, so it runs once per chunk for all its speakers
// (pyannote runs it once per (chunk, speaker) pair; the results are the same).
// docs/embedding.md gives the definition and what could not be checked without the real model.
#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/ndarray.h"
#include "graph/onnx_graph.h"
#include "graph/receptive_field.h"
#include "runtime/onnx_session.h"
#include "runtime/session_share.h"
#include "runtime/shape_plan.h"
#include "runtime/shaped_session_pool.h"
#include "stages/fbank.h"

namespace parley::stages {

struct EmbeddingConfig {
  // Chunks per trunk run (pyannote's embedding_batch_size is 32 (chunk, speaker) pairs).
  std::size_t batch_size = 32;
  // community-1's config.yaml sets embedding_exclude_overlap: true.
  bool exclude_overlap = true;
  // pyannote's PretrainedSpeakerEmbedding.min_num_samples for WeSpeaker: the shortest input its
  // fbank accepts, one 25 ms frame (400 samples at 16 kHz).
  std::size_t min_num_samples = 400;
  // Added to the variance under the square root. pyannote's StatsPool adds nothing; WeSpeaker's
  // own ONNX export adds 1e-7 (tests use it to compare with an unsplit model).
  double variance_epsilon = 0.0;
  FbankConfig fbank;
  // Threads computing fbank features (one chunk per task). Features are identical for any value.
  int feature_threads = 1;
  runtime::SessionConfig session;
  // Run the trunk in float16 (graph/float16_graph.h); only on a dynamic-shape accelerator.
  // Pooling and the head stay float32.
  bool trunk_float16 = false;
  // The graph-pooled passes (embed_pooled_in_graph and embed_pooled_from_samples_in_graph, whose
  // every pass has one shape) replay a captured graph (runtime::SessionConfig::capture_graph):
  // their sessions are then this extractor's own. Only on a provider that replays captured
  // graphs at any shape (cuda).
  bool capture_pooled_graph = false;
  // Pads every trunk call to one of these batch sizes (the padding rows are zeros, their outputs
  // dropped) and opens one session per input shape through the compiled-graph cache, trunk and
  // pooled graph alike (stages/embedding_graphs.h). Unset: on a static-shape provider
  // (MIGraphX, TensorRT) powers of two up to batch_size; elsewhere one session for all shapes.
  std::optional<runtime::Buckets> batch_buckets;
  // Sessions opened per shape: where compiled graphs are kept and the trunk and pooled models
  // are written; empty: runtime::CompileCache::default_root().
  std::filesystem::path compile_cache_root;

  // Exact mode: pool inside the graph (graph/pooled_trunk_graph.h, only features go in and
  // embeddings come out) instead of bringing every chunk's trunk frames back to the host.
  // Unset: on an accelerator whose shapes are dynamic (CUDA); a static-shape provider runs the
  // trunk at its compiled buckets and pools on the host.
  std::optional<bool> pool_exact_in_graph;

  void validate() const;
  std::string to_string() const;
};

// pyannote's minimum number of clean segmentation frames: ceil(frames * min_samples / samples).
std::size_t min_clean_frames(std::size_t frames_per_chunk, std::size_t min_num_samples,
                             std::size_t samples_per_chunk);

// The mask pyannote pools each (chunk, speaker) with: binarized_segmentations [chunks, frames,
// speakers] -> masks [chunks, speakers, frames]. With exclude_overlap, frames where two or more
// speakers are active are zeroed, unless that leaves the speaker `min_clean_frames` frames or
// fewer, in which case the full mask is kept. As in pyannote, NaN reads as 0 in the masks and a
// frame with a NaN for any speaker is never clean.
NdArray<float> select_embedding_masks(const NdArray<float>& binarized_segmentations,
                                      bool exclude_overlap, std::size_t min_clean_frames);

struct EmbeddingGraph;

// Which session a graph-pooled call runs in where one session takes any shape (CUDA, ROCm, the
// CPU; a static-shape provider always opens one per shape through the compiled-graph cache).
enum class PooledSessions {
  // One session for every shape: exact mode's calls, whose batch varies.
  kOneForAllShapes,
  // A session per input shape, the model bytes and settings otherwise the same (the shared
  // trunk's passes, a few fixed lengths): ONNX Runtime's CUDA convolutions keep the kernels
  // cuDNN chose for the last shape they ran only, so one session running passes of two lengths
  // searched its kernels again at every change of length (docs/embedding.md, "Pooling inside
  // the graph").
  kOnePerShape,
};

class EmbeddingExtractor {
 public:
  // `sessions`: where the accelerator sessions come from, shared with other users of the same
  // model and settings (engines on one GPU, runtime/session_share.h); null: a share of its own.
  EmbeddingExtractor(const std::filesystem::path& model_path, const EmbeddingConfig& config,
                     std::shared_ptr<runtime::SessionShare> sessions = nullptr);
  // From a model in memory; `model_name` stands in for a file name in messages.
  EmbeddingExtractor(const std::string& model_bytes, const std::string& model_name,
                     const EmbeddingConfig& config,
                     std::shared_ptr<runtime::SessionShare> sessions = nullptr);
  ~EmbeddingExtractor();
  EmbeddingExtractor(const EmbeddingExtractor&) = delete;
  EmbeddingExtractor& operator=(const EmbeddingExtractor&) = delete;

  const EmbeddingConfig& config() const { return config_; }
  const graph::StatisticsPoolingSplit& split() const { return split_; }
  std::size_t dimension() const { return split_.head.output_dim(); }
  // The model's file (or the name it was given), for messages.
  const std::string& model_name() const { return model_name_; }

  // Fbank features for a batch of waveforms [batch, samples] in [-1, 1]: [batch, frames, bins].
  NdArray<float> features(const NdArray<float>& waveforms) const;

  // The trunk's frames for a batch of waveforms: [batch, pooled_features, time'].
  NdArray<float> trunk_frames(const NdArray<float>& waveforms);
  // The trunk's frames for fbank features [batch, frames, bins]: [batch, pooled_features, time'].
  NdArray<float> trunk_frames_from_features(const NdArray<float>& features);

  // Pooling + linear layer on trunk frames [batch, features, time'] with per-speaker weights
  // [batch, speakers, weight_frames] (resampled to time' as pyannote does): [batch, speakers, D].
  NdArray<float> embed_frames(const NdArray<float>& frames, const NdArray<float>& weights) const;

  // pyannote's model(waveforms, weights=...): waveforms [batch, samples], weights [batch,
  // speakers, weight_frames] -> [batch, speakers, D].
  NdArray<float> embed(const NdArray<float>& waveforms, const NdArray<float>& weights);

  // pyannote's get_embeddings: chunk waveforms [chunks, samples] (the last chunk zero-padded as
  // pyannote's crop(mode="pad") does) and binarized segmentations [chunks, frames, speakers]
  // -> [chunks, speakers, D]. Chunks where no speaker is active skip the trunk: their
  // embeddings are the linear layer's bias, exactly what pooling all-zero weights yields.
  NdArray<float> embed_chunks(const NdArray<float>& chunk_waveforms,
                              const NdArray<float>& binarized_segmentations);

  // Trunk frames [chunks.size(), pooled_features, time'] of the listed chunks (indices into the
  // segmentations given to embed_chunks_with).
  using ChunkFrames = std::function<NdArray<float>(std::span<const std::size_t> chunks)>;
  // embed_chunks with the trunk frames coming from `frames_of` (called batch by batch, only for
  // chunks where some speaker is active); `samples_per_chunk` sets pyannote's minimum number of
  // clean frames. Exact mode passes the trunk run on each chunk; the shared mode
  // (stages/shared_trunk.h) passes slices of one trunk pass over the whole recording.
  NdArray<float> embed_chunks_with(const NdArray<float>& binarized_segmentations,
                                   std::size_t samples_per_chunk, const ChunkFrames& frames_of);

  // True when the model can run with the pooling inside the graph (graph/pooled_trunk_graph.h).
  bool can_pool_in_graph() const { return split_.time_axis == -1; }
  // Whether embed_chunks (exact mode) pools inside the graph: EmbeddingConfig's
  // pool_exact_in_graph, by default on a dynamic-shape accelerator, for a model that can and
  // whose trunk's stride is known.
  bool pools_exact_in_graph() const;
  // Embeddings [B, pairs, D] of features [B, frames, bins] pooled per pair through the trunk
  // with the pooling and linear layer in one graph, on this extractor's provider; the inputs
  // are those of graph/pooled_trunk_graph.h (`valid_frames` [B]: the frames of each item that
  // hold audio, the rest treated as past its end). The session is created at the first call,
  // unless open_pooled_session() created it before. `sessions`: whether this call's input shapes
  // get a session of their own (PooledSessions).
  NdArray<float> embed_pooled_in_graph(const NdArray<float>& features,
                                       const NdArray<float>& pair_weights,
                                       const NdArray<float>& inv_weight_sums,
                                       const NdArray<float>& inv_variance_denominators,
                                       const NdArray<float>& valid_frames,
                                       PooledSessions sessions = PooledSessions::kOneForAllShapes);
  // Creates embed_pooled_in_graph's session now, with the models, rather than at its first
  // call: on a GPU a session is created alone in the process (runtime/new_shape_gate.h), which
  // in the middle of a run stops every other engine's model calls. Nothing to do where sessions
  // open per shape through the compiled-graph cache.
  // `features_in_graph`: the session of embed_pooled_from_samples_in_graph instead.
  // `pass_shapes` (each one call's inputs, in the graph's order): the sessions of
  // PooledSessions::kOnePerShape for these shapes instead of the one for all shapes.
  void open_pooled_session(bool features_in_graph = false,
                           const std::vector<std::vector<runtime::InputShape>>& pass_shapes = {});
  // embed_pooled_in_graph with the features computed in the graph from samples
  // (graph/fbank_graph.h, this extractor's fbank): samples [1, S] and, per feature frame,
  // its frame in the samples and its mean window's first and one-past-last frame [frames]
  // (whole numbers as floats). Only where sessions take any shape.
  NdArray<float> embed_pooled_from_samples_in_graph(
      const NdArray<float>& samples, const NdArray<float>& frame_index,
      const NdArray<float>& window_low, const NdArray<float>& window_high,
      const NdArray<float>& pair_weights, const NdArray<float>& inv_weight_sums,
      const NdArray<float>& inv_variance_denominators, const NdArray<float>& valid_frames,
      PooledSessions sessions = PooledSessions::kOneForAllShapes);
  // The sessions of PooledSessions::kOnePerShape so far, in the order they were opened: each
  // one's input shapes, which session it is (for telling sessions apart, never null) and the
  // runs it made.
  struct PassSessionUse {
    std::vector<runtime::InputShape> shapes;
    const runtime::OnnxSession* session = nullptr;
    std::size_t runs = 0;
  };
  std::vector<PassSessionUse> pass_sessions() const;
  // How far the trunk's frames reach along time into its features (graph/receptive_field.h),
  // read from the graph at the first call: what the shared trunk's margins must cover.
  const graph::TimeReceptiveField& trunk_receptive_field() const;
  // The embedding of a pair with no weighted frame: the linear layer on zero means and
  // standard deviations sqrt(variance_epsilon), as pooling all-zero weights gives.
  const std::vector<float>& empty_pair_embedding() const { return empty_pair_embedding_; }

  // Whether sessions are opened per input shape through the compiled-graph cache (a
  // static-shape provider, or batch_buckets set); otherwise one session takes every shape.
  bool opens_per_shape() const { return trunk_graph_ != nullptr; }
  // The input shapes of the sessions opened per shape so far, in the order they were opened.
  const std::vector<std::vector<runtime::InputShape>>& opened_shapes() const;

 private:
  // Embeddings [count, speakers, D] of the listed chunks from their masks [count, speakers,
  // frames] (pyannote's, see select_embedding_masks).
  using BatchEmbedder = std::function<NdArray<float>(std::span<const std::size_t> chunks,
                                                     const NdArray<float>& masks)>;
  // embed_chunks_with's frame: masks, silent chunks (the bias), batches of active chunks.
  NdArray<float> embed_active_chunks(const NdArray<float>& binarized_segmentations,
                                     std::size_t samples_per_chunk,
                                     const BatchEmbedder& embed_batch);
  // embed_chunks with the pooling inside the graph: features in, embeddings out.
  NdArray<float> embed_chunks_pooled(const NdArray<float>& chunk_waveforms,
                                     const NdArray<float>& segmentations);
  // The trunk's output (the pooling input) for all of `features`, padded to buckets when
  // sessions are opened per shape.
  NdArray<float> run_trunk(const NdArray<float>& features);
  // The pooled graph's session (with the fbank graph in front when `features_in_graph`) for
  // calls of `shapes`, opened through the share on first use, and counted.
  runtime::OnnxSession& pass_session(bool features_in_graph,
                                     const std::vector<runtime::InputShape>& shapes);
  // The pooled graph's model (with the fbank graph in front when `features_in_graph`).
  std::string pooled_model(bool features_in_graph) const;
  // The session for `graph` at `shapes`, opened through the compiled-graph cache on first use.
  runtime::OnnxSession& session_for(const EmbeddingGraph& graph,
                                    const std::vector<runtime::InputShape>& shapes);

  // The final linear layer on statistics [rows, 2 * features]: [rows, D].
  NdArray<float> linear_layer(const NdArray<float>& stats) const;

  EmbeddingConfig config_;
  std::string model_name_;
  graph::StatisticsPoolingSplit split_;
  Fbank fbank_;
  std::shared_ptr<runtime::SessionShare> sessions_;
  std::shared_ptr<runtime::OnnxSession> trunk_;
  std::shared_ptr<runtime::OnnxSession> pooled_;
  std::shared_ptr<runtime::OnnxSession> pooled_with_fbank_;
  struct PassSession {
    bool features_in_graph = false;
    std::vector<runtime::InputShape> shapes;
    std::shared_ptr<runtime::OnnxSession> session;
    std::size_t runs = 0;
  };
  // PooledSessions::kOnePerShape's sessions in the order they were opened (a few: one per pass
  // length and graph).
  std::vector<PassSession> pass_sessions_;
  std::vector<float> empty_pair_embedding_;
  mutable std::optional<graph::TimeReceptiveField> receptive_field_;  // read at first use
  // Sessions per shape (static-shape providers): the graphs as files, one session per shape.
  std::filesystem::path compile_cache_root_;
  std::optional<runtime::Buckets> trunk_buckets_;
  std::unique_ptr<EmbeddingGraph> trunk_graph_;
  std::unique_ptr<EmbeddingGraph> pooled_graph_;  // made at the first pooled pass
  std::unique_ptr<runtime::ShapedSessionPool> shaped_sessions_;
};

}  // namespace parley::stages
