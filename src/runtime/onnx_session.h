#pragma once
// A thin RAII layer over an ONNX Runtime session: one process-wide Ort::Env, sessions created from
// a model file with explicit threading and optimisation settings, float32 tensors in and out.
// Execution-provider selection builds on SessionConfig (see providers work in runtime/).
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <onnxruntime_cxx_api.h>

#include "core/ndarray.h"
#include "runtime/new_shape_gate.h"
#include "runtime/provider.h"
#include "runtime/shape_plan.h"

namespace parley::runtime {

enum class GraphOptimization { kDisabled, kBasic, kExtended, kAll };

struct SessionConfig {
  // Threads inside one operator. 1 keeps several sessions from fighting over 2 cores and keeps
  // results independent of the machine's core count.
  int intra_op_threads = 1;
  // kExtended, not kAll: ORT segfaults creating a session for the fp16 segmentation model at kAll.
  GraphOptimization optimization = GraphOptimization::kExtended;
  // ONNX Runtime's CPU arena keeps every block it ever took (growing by doubling), so a session
  // otherwise holds its largest run's activations, and the slack of the doubling, for its whole
  // life. true: what the run left unused goes back after each run (ORT's arena shrinkage). For
  // sessions whose runs are long and large (the embedding trunk over minutes of audio), where
  // a run's page faults cost little beside its arithmetic (docs/corpus.md, "Memory").
  bool release_cpu_arena_after_run = false;

  // Execution provider; the CPU unless set. `provider_options` are passed to ONNX Runtime over the
  // provider's defaults (see runtime/provider.cpp). A provider that cannot be used is an error.
  ProviderId provider = ProviderId::kCpu;
  ProviderOptions provider_options;
  // Folder the provider loads its compiled graphs from and saves them to (compile_cache.h);
  // empty: no compiled-graph cache.
  std::filesystem::path compiled_cache_dir;
  // Pins symbolic dimensions ("batch" -> 8) so static-shape providers see fixed shapes.
  std::map<std::string, std::int64_t> dimension_overrides;
  // The exact input shapes this session will run (TensorRT builds its profile for them).
  std::vector<InputShape> static_shapes;
  // Replay a captured graph (the provider's graph_capture_option: CUDA graphs on cuda) instead of
  // launching every kernel of every run. Runs then go through device buffers allocated once per
  // input shape, each shape captured once as a graph of its own: the host's inputs are copied
  // into those buffers and the outputs out of the session's own (ONNX Runtime's CopyTensors,
  // through the provider's data transfer). One run at a time, so such a session is never
  // shared (runtime/session_share.h). Only on a provider that can (check_graph_capture).
  bool capture_graph = false;
  // Runs through buffers bound once per input shape (ONNX Runtime's IoBinding), as capture_graph's
  // runs go, without capturing anything: how that path is tested where no provider captures.
  bool persistent_buffers = false;

  void validate() const;
  std::string to_string() const;
};

struct TensorInfo {
  std::string name;
  ONNXTensorElementDataType element_type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  std::vector<std::int64_t> shape;   // -1 marks a dynamic dimension
  std::vector<std::string> symbols;  // names of the dimensions ("batch"), empty when unnamed

  std::string to_string() const;  // e.g. "waveform float32[1,1,-1]"
};

const char* element_type_name(ONNXTensorElementDataType type);

// Fails, in the words of `field` (the configuration field that asked for it) and naming
// `network`, unless `provider` replays captured graphs at any input shape
// (ProviderTraits::graph_capture, dynamic shapes).
void check_graph_capture(ProviderId provider, std::string_view field,
                         std::string_view network = "the network");

// The process-wide ONNX Runtime environment (created on first use, errors only). It is never
// destroyed by static destruction at exit -- there it would run after the CUDA libraries that a
// provider loaded have torn themselves down (docs/providers.md, "Shutdown") -- but released by
// runtime/shutdown.h in order. Throws parley::Error after that shutdown.
Ort::Env& ort_env();
// Releases the environment (runtime/shutdown.h calls it after unregistering provider libraries).
void release_ort_env();
// OnnxSession objects alive now: the environment and provider libraries must outlive them.
int live_session_count();

// A model held in memory (for example one edited with graph/onnx_graph.h); `name` stands in
// for the file name in messages.
struct ModelBuffer {
  std::string_view bytes;
  std::string name;
};

// Counts live sessions (copied or moved tokens count as new ones).
class LiveSessionToken {
 public:
  LiveSessionToken();
  LiveSessionToken(const LiveSessionToken&);
  LiveSessionToken& operator=(const LiveSessionToken&) = default;
  ~LiveSessionToken();
};

class OnnxSession {
 public:
  OnnxSession(const std::filesystem::path& model_path, const SessionConfig& config);
  OnnxSession(const ModelBuffer& model, const SessionConfig& config);
  ~OnnxSession();
  OnnxSession(const OnnxSession&) = delete;
  OnnxSession& operator=(const OnnxSession&) = delete;

  const std::filesystem::path& model_path() const { return model_path_; }
  // The provider the session runs on and how it was attached ("built in", "plugin library ...").
  ProviderId provider() const { return provider_; }
  const std::string& provider_method() const { return provider_method_; }
  const std::vector<TensorInfo>& inputs() const { return inputs_; }
  const std::vector<TensorInfo>& outputs() const { return outputs_; }
  // Custom metadata properties stored in the model (ModelProto.metadata_props).
  std::map<std::string, std::string> metadata() const;

  // Runs the model on float32 inputs given by name; returns the requested outputs as float32
  // (float16 outputs are widened). Throws parley::Error naming the model on any ORT failure.
  // `release_cpu_arena` hands what the run left unused in the CPU arena back after this run,
  // whatever the session's release_cpu_arena_after_run says: for a session's last run of a job.
  std::vector<NdArray<float>> run(
      const std::vector<std::pair<std::string, const NdArray<float>*>>& named_inputs,
      const std::vector<std::string>& output_names, bool release_cpu_arena = false);

  Ort::Session& ort_session() { return *session_; }
  // Input shapes with buffers of their own so far (SessionConfig::persistent_buffers, and
  // capture_graph, which captures one graph for each).
  std::size_t bound_shapes() const;

 private:
  // A float32 or float16 tensor in host memory as float32 (fails naming `output_name` otherwise).
  NdArray<float> host_array(const Ort::Value& value, const std::string& output_name) const;
  struct BoundShape;
  // run() with persistent buffers: through those of these input shapes.
  std::vector<NdArray<float>> run_bound(
      const std::vector<std::pair<std::string, const NdArray<float>*>>& named_inputs,
      const std::vector<std::string>& output_names);
  BoundShape& bound_shape(
      const std::string& key,
      const std::vector<std::pair<std::string, const NdArray<float>*>>& named_inputs,
      const std::vector<std::vector<std::int64_t>>& input_shapes,
      const std::vector<std::string>& output_names);
  // Threads, optimisation level, dimension overrides and the execution provider.
  Ort::SessionOptions make_options(const SessionConfig& config);
  void attach(Ort::SessionOptions& options, const SessionConfig& config);
  [[noreturn]] void fail_on_provider(const std::string& model_name, const std::string& error) const;
  void log_creation(std::chrono::steady_clock::time_point start) const;
  void describe_inputs_and_outputs();
  // Accelerated sessions are created apart from new shapes' runs and get a gate for their runs
  // (new_shape_gate.h).
  std::shared_lock<WriterFirstLock> create_apart_if_accelerated(const SessionConfig& config);

  std::filesystem::path model_path_;
  ProviderId provider_ = ProviderId::kCpu;
  std::string provider_method_ = "built in";
  LiveSessionToken live_;
  std::unique_ptr<Ort::Session> session_;
  std::vector<TensorInfo> inputs_;
  std::vector<TensorInfo> outputs_;
  Ort::RunOptions run_options_;
  Ort::RunOptions releasing_run_options_;         // run_options_ with the CPU arena's shrinkage
  std::unique_ptr<NewShapeGate> new_shape_gate_;  // null on the CPU, whose runs never wait
  bool bind_buffers_ = false;
  bool capture_graph_ = false;
  // Buffers bound per input shape: declared after session_, so released before it (they come
  // from the session's allocators, which are released before the session too).
  mutable std::mutex bound_mutex_;
  std::vector<Ort::Allocator> input_allocators_;  // per session input, where the session wants it
  std::map<std::string, std::unique_ptr<BoundShape>> bound_;  // by input shapes
};

}  // namespace parley::runtime
