#pragma once
// The embedding stage's "shared" mode: one ResNet trunk pass over the whole recording instead of
// one per 10 s chunk. pyannote runs the trunk on every chunk, so at a 1 s step every second of
// audio goes through the trunk ten times. Convolutions are shift-equivariant in time, so away
// from the chunk edges a chunk's trunk frames are a slice of the recording's feature map; this
// class computes that map block by block (blocks of a minute with margins that cover
// the trunk's receptive field, computed lazily and freed once no later chunk needs them) and
// pools each (chunk, speaker) from the chunk's slice with pyannote's mask, through
// EmbeddingExtractor's own pooling and linear layer.
// Differences from the exact mode, measured and explained in docs/embedding.md ("Shared trunk"):
// the features are centred with a mean over a sliding chunk-length window instead of each
// chunk's own mean, and chunk edges see the neighbouring audio instead of zero padding.
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/ndarray.h"
#include "frames/sliding_window.h"
#include "runtime/shape_plan.h"
#include "stages/embedding.h"
#include "stages/fbank.h"

namespace parley::stages {

// exact: pyannote's definition, the trunk on every chunk. shared: this file.
enum class EmbeddingMode { kExact, kShared };
const char* embedding_mode_name(EmbeddingMode mode);
// "exact" or "shared"; fails naming the choices otherwise.
EmbeddingMode parse_embedding_mode(const std::string& name);

// What the shared map's features are centred with (pyannote: each chunk's own mean).
enum class SharedTrunkMean {
  kSlidingWindow,  // per frame, the mean over the chunk-length window centred on it
  kRecording,      // the whole (padded) recording's mean
};
const char* shared_trunk_mean_name(SharedTrunkMean mean);
SharedTrunkMean parse_shared_trunk_mean(const std::string& name);

// Where the (chunk, speaker) statistics are pooled.
enum class SharedTrunkPooling {
  kAuto,   // in the graph when the embedding model runs on an accelerator, else on the host
  kHost,   // the map comes back block by block and the CPU slices and pools each chunk
  kGraph,  // one pass per range of chunks, pooled inside the network
           // (graph/pooled_trunk_graph.h): only weights go in and embeddings come out
};
const char* shared_trunk_pooling_name(SharedTrunkPooling pooling);
SharedTrunkPooling parse_shared_trunk_pooling(const std::string& name);

// Where graph pooling's passes compute their features (centred log mel).
enum class SharedTrunkFeatures {
  kAuto,   // in the graph when the pooling is, on a provider that takes any shape, with the
           // sliding-window mean; else on the host
  kHost,   // stages/fbank.h on the CPU, the features copied to the device
  kGraph,  // graph/fbank_graph.h in front of the pooled trunk: samples go in
};
const char* shared_trunk_features_name(SharedTrunkFeatures features);
SharedTrunkFeatures parse_shared_trunk_features(const std::string& name);

// When the sessions of graph pooling's shorter passes (tail_chunks_per_pass) are made: each pass
// length has a session of its own (EmbeddingExtractor, PooledSessions::kOnePerShape); the whole
// pass's is made with the models.
enum class TailSessions {
  kAtStart,      // with the models: a longer start, no session made in the middle of a run
  kAtFirstPass,  // at the first pass of each length: only the lengths a run needs
};
const char* tail_sessions_name(TailSessions when);
TailSessions parse_tail_sessions(const std::string& name);

struct SharedTrunkConfig {
  // Fbank frames (10 ms) whose trunk frames one pass keeps: 6000 = 1 minute. A pass's
  // activations are the peak of a long recording's memory on the CPU, so the block bounds it;
  // the trunk frames do not depend on it (blocks equal one pass). Shorter blocks cost CPU time
  // (docs/corpus.md, "Memory", has the trade measured).
  std::size_t block_frames = 6000;
  // Fbank frames per trunk input within a block: a block runs as a batch of such passes, each
  // with its own margins. Default: the whole block in one pass; shorter passes add margin work
  // but may suit ONNX Runtime's batching better on some machines (not settled on the noisy
  // build machine).
  std::size_t pass_frames = 6000;
  // Fbank frames run on each side of a pass and thrown away: at least half the trunk's
  // receptive field (ResNet34: 112 frames), a multiple of time_stride.
  std::size_t margin_frames = 128;
  // Fbank frames per trunk frame (ResNet34: three stride-2 stages, 8). Checked on every pass.
  std::size_t time_stride = 8;
  // true: one pass per distinct chunk phase (chunk start modulo time_stride), so every chunk's
  // trunk frames lie on the grid of its own pass (at a 1 s step: two passes, phases 0 and 4).
  // false: one pass; a chunk off the grid takes the nearest grid frames (up to half a trunk
  // frame, 40 ms, late).
  bool exact_alignment = false;
  SharedTrunkMean mean = SharedTrunkMean::kSlidingWindow;
  SharedTrunkPooling pooling = SharedTrunkPooling::kAuto;
  // Only where the pooling is in the graph.
  SharedTrunkFeatures features = SharedTrunkFeatures::kAuto;
  // Pooling in the graph: chunks per pass. Every pass has the same input length (that of this
  // many chunks plus margins; the last pass is moved back to end at the recording's end), so a
  // provider compiles one shape and cuDNN keeps its kernels: a new input length costs a kernel
  // search many times a pass's own time. More chunks per pass spend less on margins
  // (docs/benchmarks.md has the GPU figures behind the default).
  std::size_t chunks_per_pass = 256;
  // Pooling in the graph: shorter passes, counted as chunks_per_pass counts (one-second steps;
  // those not below it are left out). A range of fewer than chunks_per_pass chunks (a
  // recording's tail after its whole passes, or a recording shorter than one pass) runs in one
  // pass of the smallest of these that holds it, instead of a whole pass moved back over chunks
  // already embedded. Each is one more input shape, run in a session of its own: a static-shape
  // provider compiles it, and cuDNN searches its kernels at that session's first run only
  // (docs/embedding.md, "Pooling inside the graph", has the trade). Empty: every pass is whole.
  std::vector<std::size_t> tail_chunks_per_pass = {64, 192};
  // Pooling in the graph: when the shorter passes' sessions are made (the pipeline's Diarizer
  // makes them; docs/embedding.md, "Pooling inside the graph", has the trade measured).
  TailSessions tail_sessions = TailSessions::kAtStart;
  // Threads computing fbank features.
  int threads = 1;

  void validate() const;
  std::string to_string() const;
};

// Fails, saying what to do, when a trunk with `field` cannot be shared with `config`: it mixes
// the whole time axis, its time stride is not config.time_stride, or it reaches further than
// config.margin_frames; warns once when the field could not be read from the graph.
void check_receptive_field(const graph::TimeReceptiveField& field, const SharedTrunkConfig& config);

// Whether a SharedTrunk with `config` on `extractor` pools inside the graph: kGraph, or kAuto
// with the model on an accelerator; never with exact alignment or a model whose statistics are
// not over its last axis (kGraph then fails when the trunk is made).
bool shared_trunk_pools_in_graph(const SharedTrunkConfig& config,
                                 const EmbeddingExtractor& extractor);
// The same decision before the extractor exists (the placement): the embedding model on an
// accelerator or not, and whether it can pool in the graph at all.
bool shared_trunk_pools_in_graph(const SharedTrunkConfig& config, bool on_accelerator,
                                 bool model_can_pool_in_graph);

// Whether a SharedTrunk with `config` on `extractor` computes its features inside the pooled
// graph: kGraph, or kAuto on an accelerator that takes any shape with the sliding-window mean;
// never where the pooling is on the host. kGraph fails when the trunk is made if the mean is the
// recording's or the provider compiles one graph per shape.
bool shared_trunk_features_in_graph(const SharedTrunkConfig& config,
                                    const EmbeddingExtractor& extractor);

// The shape of a pass a SharedTrunk pools in the graph (graph/pooled_trunk_graph.h): its passes
// take a few fixed input lengths (whole passes, and the shorter ones of tail_chunks_per_pass for
// a range's rest), so a static-shape provider compiles a few graphs. `parley warm-cache` and the
// placement use them to name the graphs the pipeline will load.
struct PooledPassShape {
  std::size_t chunks = 0;        // chunks the pass holds at this step
  std::size_t frames = 0;        // fbank frames of a pass (SharedTrunk::graph_pass_frames())
  std::size_t trunk_frames = 0;  // frames / time_stride
  std::size_t pairs = 0;         // chunks * speakers
  std::size_t bins = 0;          // mel bins
  std::size_t samples = 0;       // samples a pass computes its features from in the graph

  // The pooled graph's inputs for one pass (batch 1), in graph::PooledTrunkGraphNames' order.
  std::vector<runtime::InputShape> inputs() const;
  // The inputs of the pooled graph with the fbank graph in front (features in the graph), in
  // the order EmbeddingExtractor::embed_pooled_from_samples_in_graph gives them.
  std::vector<runtime::InputShape> inputs_from_samples() const;
};

// The whole pass's shape for chunks of `window_samples` every `step_samples` (which must be a
// whole number of fbank frames: fails saying what to do otherwise) with `speakers` local
// speakers.
PooledPassShape pooled_pass_shape(const SharedTrunkConfig& config, std::int64_t step_samples,
                                  std::int64_t window_samples, const FbankConfig& fbank,
                                  std::size_t speakers);
// Every pass shape graph pooling may run at this step, shortest first, the whole pass last.
std::vector<PooledPassShape> pooled_pass_shapes(const SharedTrunkConfig& config,
                                                std::int64_t step_samples,
                                                std::int64_t window_samples,
                                                const FbankConfig& fbank, std::size_t speakers);
// The chunks of each pass shape at this step (pooled_pass_shapes' order): the runtime's
// buckets, whose plan (runtime::plan_batches: whole passes, then the rest in the smallest that
// holds it) is the passes SharedTrunk runs.
std::vector<std::size_t> pooled_pass_chunks(const SharedTrunkConfig& config,
                                            std::int64_t step_samples);

class SharedTrunk {
 public:
  // `extractor` and `samples` (16 kHz mono, the whole recording cut by `plan`) must outlive
  // this object and stay unchanged. The chunk step must be a whole number of fbank frames.
  SharedTrunk(EmbeddingExtractor& extractor, std::span<const float> samples,
              const frames::ChunkPlan& plan, const SharedTrunkConfig& config);

  // Embeddings [count, speakers, D] of chunks [first_chunk, first_chunk + count) from their
  // binarized segmentations [count, frames, speakers], as EmbeddingExtractor::embed_chunks
  // computes them but with the trunk frames taken from the shared map. Ranges must be called in
  // ascending order: the blocks before `first_chunk` are freed.
  NdArray<float> embed_chunks(std::size_t first_chunk, const NdArray<float>& range_segmentations);

  // Whether embed_chunks pools inside the graph (config pooling, the extractor's provider).
  bool pools_in_graph() const { return pool_in_graph_; }
  // Whether those passes compute their features in the graph too (config features).
  bool features_in_graph() const { return features_in_graph_; }
  // Fbank frames of a whole graph-pooling pass (multiple of time_stride).
  std::size_t graph_pass_frames() const {
    return graph_passes_.back().grid_frames * config_.time_stride;
  }
  // Graph pooling so far: passes run per pass length, keyed by the chunks a pass holds.
  const std::map<std::size_t, std::size_t>& graph_passes_by_chunks() const {
    return graph_passes_by_chunks_;
  }

  // Trunk frames [pooled_features, frames_per_chunk] of one chunk from the shared map.
  NdArray<float> chunk_frames(std::size_t chunk);

  // Features (centred log mel) [frames, bins] of fbank frames [first, first + count) of the
  // padded recording, as the shared map's passes see them. Frames past the end are those of
  // more zero samples, centred with the last window's mean (graph pooling's passes all have one
  // length, so a recording shorter than a pass, or the last few frames of a longer one, run on;
  // the pooled graph masks them, graph/valid_frames_mask.h).
  NdArray<float> centred_features(std::size_t first, std::size_t count);

  // Trunk frames [pooled_features, count] of grid frames [first, first + count) of `phase`,
  // computed in one pass over exactly the fbank frames they need plus margins (no blocks): the
  // reference the blocks are tested against.
  NdArray<float> single_pass_frames(std::size_t phase, std::size_t first, std::size_t count);

  std::size_t total_frames() const { return total_frames_; }                // fbank frames, padded
  std::size_t frames_per_chunk() const { return trunk_frames_per_chunk_; }  // 125
  std::size_t blocks_held() const;                                          // for memory checks
  // The longest trunk input so far (fbank frames, one batch item): what a pass's activations
  // scale with.
  std::size_t largest_pass_frames() const { return largest_pass_frames_; }
  std::size_t trunk_passes() const { return trunk_passes_; }  // blocks computed so far
  std::size_t trunk_input_frames() const { return trunk_input_frames_; }
  // Fbank frames whose log mel was computed so far (host or graph), each pass's mean windows
  // included; total_frames() is what the chunks need once.
  std::size_t feature_frames() const { return feature_frames_; }
  // Where the time went so far (seconds): features (fbank and centring), trunk passes (the
  // network, host copies included), pooling (slicing the map, statistics, linear layer).
  double feature_seconds() const { return feature_seconds_; }
  double trunk_seconds() const { return trunk_seconds_; }
  double pooling_seconds() const { return pooling_seconds_; }

 private:
  struct Block {
    std::size_t first = 0;  // first grid frame kept
    NdArray<float> frames;  // [pooled_features, kept grid frames]
  };
  struct GraphPass {
    std::size_t chunks = 0;       // chunks it holds
    std::size_t grid_frames = 0;  // its input length in trunk frames
  };
  struct Placement {
    std::size_t phase = 0;       // fbank frame of grid frame 0
    std::size_t first_grid = 0;  // grid frame of the chunk's first trunk frame
  };

  Placement placement(std::size_t chunk) const;
  // Computes the blocks chunk `chunk` reads (no-op for those already held).
  void ensure_chunk_blocks(std::size_t chunk);
  // Copies chunk `chunk`'s trunk frames [pooled_features, frames_per_chunk] into `out` from
  // blocks already computed; reads only, so chunks can be copied concurrently.
  void copy_chunk_frames(std::size_t chunk, std::span<float> out) const;
  std::size_t pooled_features() const;
  std::size_t grid_frames(std::size_t phase) const;
  // Trunk frames of grid frames [first, last) of `phase`, running the trunk over
  // [phase + 8 first - margin, phase + 8 last + margin) clipped to the recording.
  NdArray<float> run_pass(std::size_t phase, std::size_t first, std::size_t last);
  // Several such passes, those of equal input length in one batch.
  std::vector<NdArray<float>> run_passes(
      std::size_t phase, const std::vector<std::pair<std::size_t, std::size_t>>& ranges);
  const Block& block(std::size_t phase, std::size_t index);
  // Log mel (not centred) of fbank frames [first, first + count) of the zero-padded recording.
  std::vector<float> log_mel(std::size_t first, std::size_t count) const;
  void release_blocks_before(std::size_t fbank_frame);
  // The first window frame of fbank frame `frame` under the sliding-window mean.
  std::size_t window_start(std::size_t frame) const;
  // One graph pass with the features computed in the graph: the samples of the span of frames
  // the pass's windows cover, and per frame its own and its window's frames in that span.
  NdArray<float> embed_pass_from_samples(std::size_t first, std::size_t count,
                                         const NdArray<float>& weights,
                                         const NdArray<float>& inv_weight_sums,
                                         const NdArray<float>& inv_denominators,
                                         const NdArray<float>& valid_frames);
  // embed_chunks with the pooling inside the graph: whole passes, then the rest in the shortest
  // pass of graph_passes_ that holds it.
  NdArray<float> embed_chunks_in_graph(std::size_t first_chunk,
                                       const NdArray<float>& range_segmentations);
  // Embeddings of chunks [range_first, range_first + range_count) of a range starting at
  // `first_chunk`, in one pass of `pass`, written into `embeddings` [count, speakers, D].
  void embed_graph_pass(const GraphPass& pass, std::size_t first_chunk, std::size_t range_first,
                        std::size_t range_count, const NdArray<float>& masks,
                        std::span<const std::size_t> sources, NdArray<float>& embeddings);

  EmbeddingExtractor& extractor_;
  std::span<const float> samples_;
  frames::ChunkPlan plan_;
  SharedTrunkConfig config_;
  Fbank fbank_;  // the extractor's fbank without the per-input mean subtraction
  std::size_t hop_ = 0;
  std::size_t chunk_fbank_frames_ = 0;      // 998
  std::size_t trunk_frames_per_chunk_ = 0;  // 125
  std::size_t padded_samples_ = 0;
  std::size_t total_frames_ = 0;
  std::size_t block_grid_frames_ = 0;
  bool pool_in_graph_ = false;
  bool features_in_graph_ = false;
  std::vector<GraphPass> graph_passes_;  // the pass lengths, shortest first, the whole one last
  std::map<std::size_t, std::size_t> graph_passes_by_chunks_;
  std::size_t feature_frames_ = 0;
  std::vector<double> recording_mean_;  // [bins], SharedTrunkMean::kRecording only
  std::map<std::size_t, std::map<std::size_t, Block>> blocks_;  // phase -> block index -> block
  std::size_t trunk_passes_ = 0;
  std::size_t trunk_input_frames_ = 0;
  std::size_t largest_pass_frames_ = 0;
  double feature_seconds_ = 0.0;
  double trunk_seconds_ = 0.0;
  double pooling_seconds_ = 0.0;
};

}  // namespace parley::stages
