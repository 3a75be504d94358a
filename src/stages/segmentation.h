#pragma once
// Runs pyannote's segmentation-3.0 model over fixed-length audio chunks: waveform
// [batch,1,samples] in, powerset log-probabilities [batch,frames,7] out (classes {}, {0}, {1},
// {2}, {0,1}, {0,2}, {1,2}). Works with the shipped float16 export, whose batch is pinned to 1
// (it is run one chunk at a time), and with float32 or rewritten models whose batch is dynamic
// (chunks can go `batch_size` per call). Use the shipped fp16 file only after
// tools/fold_sincnet_filters.py: see docs/segmentation.md.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/ndarray.h"
#include "runtime/onnx_session.h"
#include "runtime/session_share.h"
#include "runtime/shape_plan.h"
#include "runtime/shaped_session_pool.h"
#include "stages/segmentation_feed.h"
#include "stages/shared_first_convolution.h"

namespace parley::stages {

struct SegmentationConfig {
  // Chunks in flight at once. Each worker owns a session with one intra-op thread, and chunks
  // are grouped into batches independently of this number, so results are bit-identical for
  // any thread count. On an accelerator there is one session (whole batches feed the device).
  int threads = 1;
  // Threads inside each worker's session. 1 (default): workers, not threads inside a session,
  // use the cores best (docs/segmentation.md); kept configurable for many-core machines.
  int intra_op_threads = 1;
  // Chunks per model call. On the CPU a model whose batch is fixed to 1 is made dynamic for
  // more than 1 (an exact rewrite), and every call is padded to the whole batch, so a chunk's
  // result does not depend on which chunks share its call. Changing it may change results in
  // the last bits (matrix-vector against matrix kernels); it is part of what defines the
  // output, unlike `threads`. Float16 models on the CPU run one chunk per call: ORT's float16
  // LSTM rounds with the batch size. On a static-shape provider, ignored when the batch is
  // fixed.
  std::size_t batch_size = 1;
  // pyannote segmentation-3.0 reads 10 s at 16 kHz.
  std::size_t samples_per_chunk = 160000;
  runtime::GraphOptimization optimization = runtime::GraphOptimization::kExtended;
  // Run the model in float16 (graph/float16_graph.h); only on a dynamic-shape accelerator.
  bool float16 = false;
  // On the CPU, a call's output depends only on its input: the first call whose chunks are all
  // digital silence is run and its output reused for every other such call in the same run,
  // which gives the same result. False: every chunk runs (a test compares the two).
  bool reuse_silent_chunks = true;
  // On the CPU, the model's first convolution (SincNet's, on the normalised waveform) runs once
  // over each recording and overlapping chunks share it (stages/shared_first_convolution.h):
  // a fifth less arithmetic at a 1 s step. Not bit-identical to running the model per chunk
  // (the normalisation is applied after the convolution): docs/segmentation.md has the
  // agreement. Models that do not start that way run whole either way.
  bool share_first_convolution = true;
  // Execution provider of every worker's session; for accelerators the model is rewritten first
  // (graph/accelerator_rewrite.h: constant If inlined, zero LSTM states removed, batch dynamic).
  runtime::ProviderId provider = runtime::ProviderId::kCpu;
  runtime::ProviderOptions provider_options;
  // Workers feeding an accelerator at once, taking whole batches in turn, each call on its own
  // device stream (the workers run one session: runtime/session_share.h): the LSTMs run step by
  // step, so one stream leaves a large GPU mostly idle. Results do not depend on it (batches
  // are formed before they are handed out).
  int accelerator_sessions = 1;
  // On a dynamic-shape accelerator a call of fewer than batch_size chunks (a run's last) is
  // padded with zero rows to a multiple of this: every new batch size costs a first run that
  // goes alone in the process while cuDNN chooses its kernels, a padded row
  // far less. 1: no padding.
  std::size_t accelerator_batch_multiple = 64;
  // Pads every call to one of these batch sizes (the tail to the smallest that holds it; the
  // padding rows are zeros and their outputs are dropped), so that a static-shape provider
  // compiles one graph per bucket (runtime/shape_plan.h). Unset: calls of up to batch_size.
  std::optional<runtime::Buckets> batch_buckets;
  // Static-shape providers (MIGraphX, TensorRT): where compiled graphs are kept and the rewritten
  // model is written (runtime/compile_cache.h); empty: runtime::CompileCache::default_root().
  std::filesystem::path compile_cache_root;

  void validate() const;
};

// What the model file declares, checked against what the segmentation stage needs.
struct SegmentationSignature {
  std::string input_name;
  std::string output_name;
  bool batch_is_dynamic = false;       // false: declared batch is 1, chunks go one per call
  std::int64_t declared_samples = -1;  // -1: any chunk length
  std::int64_t classes = 7;            // powerset classes: 3 speakers, at most 2 at once
  // Set by tools/fold_sincnet_filters.py (metadata "parley.sincnet_filters").
  bool sincnet_folded = false;

  // Reads and validates the declared input/output; throws parley::Error naming the model and
  // the offending shape when it is not a [batch,1,samples] -> [batch,frames,7] float graph.
  static SegmentationSignature from(const runtime::OnnxSession& session);
};

// A message telling the user to fold the SincNet filterbank when the model `model_bytes` (named
// `model_name`) computes it in float16 at run time (such as the shipped segmentation-3.0-fp16.onnx,
// which then agrees with pyannote on fewer frames: docs/segmentation.md); empty
// otherwise. SegmentationModel logs it as a warning.
std::string unfolded_fp16_warning(const std::string& model_bytes, const std::string& model_name);

// Calls of `batch_size` chunks for `chunk_count` chunks, each padded to a multiple of
// `multiple` chunks but never past `batch_size` (the CPU pads to the whole batch, a dynamic-shape
// accelerator to SegmentationConfig::accelerator_batch_multiple).
std::vector<runtime::BatchSlice> plan_padded_calls(std::size_t chunk_count, std::size_t batch_size,
                                                   std::size_t multiple);

// Where a provider puts a run's calls without buckets.
enum class SegmentationCallPadding {
  kWholeBatch,  // the CPU: every call padded to the whole batch
  kMultiple,    // a dynamic-shape accelerator: to accelerator_batch_multiple
  kNone,        // a static-shape provider: compiled per batch, calls as they come
};
// The calls of a run of `chunk_count` chunks in calls of `batch_size`, padded as `padding` says
// (kMultiple: to `accelerator_multiple`). `rows` > 0 caps a call at that many chunks and pads
// every call to it, on the CPU and on a dynamic-shape accelerator alike: a run that is always one
// 10 s window (the live diarizer's step) then costs `rows` rows, not 64 or the whole batch, and
// has one shape (one first run) on an accelerator.
std::vector<runtime::BatchSlice> plan_unbucketed_calls(std::size_t chunk_count,
                                                       std::size_t batch_size,
                                                       SegmentationCallPadding padding,
                                                       std::size_t accelerator_multiple,
                                                       std::size_t rows);

class SegmentationModel {
 public:
  // `sessions`: where the accelerator sessions come from, shared with other users of the same
  // model and settings (engines on one GPU); null: a share of its own. Either way the workers
  // on an accelerator run one session (runtime/session_share.h).
  SegmentationModel(const std::filesystem::path& model_path, const SegmentationConfig& config,
                    std::shared_ptr<runtime::SessionShare> sessions = nullptr);
  ~SegmentationModel();
  SegmentationModel(const SegmentationModel&) = delete;
  SegmentationModel& operator=(const SegmentationModel&) = delete;

  const SegmentationSignature& signature() const { return signature_; }
  const SegmentationConfig& config() const { return config_; }
  const std::filesystem::path& model_path() const { return model_path_; }
  // Chunks per model call actually used: config().batch_size, or 1 for a fixed-batch model.
  std::size_t effective_batch_size() const;
  // Chunks an accelerator runs at once (a batch per call in flight); 0 on the CPU. A caller
  // that feeds fewer leaves the device padding or idle (the corpus engine waits for this many).
  std::size_t accelerator_chunks_in_flight() const;
  // The calls run() makes for `chunk_count` chunks (padded to buckets when configured, else
  // plan_unbucketed_calls). `rows` > 0: calls of at most that many chunks, each padded to it,
  // for a caller whose runs are always that short (the live diarizer's one window).
  std::vector<runtime::BatchSlice> plan_calls(std::size_t chunk_count, std::size_t rows = 0) const;
  // The model as the sessions load it: rewritten for an accelerator, else the file's bytes
  // (empty when the file is loaded directly).
  const std::string& rewritten_model() const { return rewritten_model_; }

  // Runs `chunk_count` chunks read from `feed` and hands their log-probabilities to it, call by
  // call in chunk order (stages/segmentation_feed.h). One run at a time per SegmentationModel
  // (its workers' sessions and buffers are reused). `rows` as for plan_calls().
  void run(std::size_t chunk_count, SegmentationFeed& feed, std::size_t rows = 0);
  // Whether the first convolution is shared (share_first_convolution, a CPU session and a
  // model that starts that way).
  bool shares_first_convolution() const { return first_convolution_ != nullptr; }
  // How far past a chunk's last sample a run may read the recording that the feed's origin names
  // (the shared convolution's block that holds the chunk's end); 0 when it reads the chunk only.
  std::size_t samples_read_past_chunk() const {
    return first_convolution_ ? first_convolution_->samples_read_past_chunk() : 0;
  }
  // For chunks already cut, `chunks` [chunk_count, samples_per_chunk]: their log-probabilities
  // [chunk_count, frames, classes].
  NdArray<float> run(const NdArray<float>& chunks, std::size_t rows = 0);

 private:
  struct Worker;
  // The session that runs a call of `batch` chunks: the worker's (on an accelerator one session
  // that every worker runs, runtime/session_share.h), or on a static-shape provider the compiled
  // graph for that batch size (opened on first use, through the cache).
  runtime::OnnxSession& session_for(Worker& worker, std::size_t batch);
  runtime::OnnxSession& compiled_session(std::size_t batch);

  std::filesystem::path model_path_;
  runtime::SessionConfig session_config_;
  std::shared_ptr<runtime::SessionShare> sessions_;
  bool static_shapes_ = false;
  // Static-shape providers (one worker): the rewritten model on disk and its compiled graphs.
  runtime::ShapedModel compiled_model_;
  std::unique_ptr<runtime::ShapedSessionPool> compiled_sessions_;
  SegmentationConfig config_;
  SegmentationSignature signature_;
  std::string rewritten_model_;  // the model as sessions load it, when it had to be rewritten
  bool cpu_float16_ = false;     // a float16 model on the CPU: one chunk per call
  // Shared first convolution: the workers' sessions run the rest of the model from its input.
  std::unique_ptr<SharedFirstConvolution> first_convolution_;
  std::string rest_model_;
  std::string rest_input_;
  std::vector<std::unique_ptr<Worker>> workers_;
};

}  // namespace parley::stages
