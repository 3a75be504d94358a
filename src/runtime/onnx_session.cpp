#include "runtime/onnx_session.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include <onnxruntime_run_options_config_keys.h>

#include <spdlog/spdlog.h>

#include "core/error.h"
#include "core/stage_timer.h"
#include "core/trace.h"
#include "runtime/compile_cache.h"
#include "runtime/device_memory.h"
#include "runtime/provider_attach.h"
#include "runtime/provider_discovery.h"
#include "runtime/stream_capture.h"

namespace parley::runtime {
namespace {

GraphOptimizationLevel to_ort(GraphOptimization level) {
  switch (level) {
    case GraphOptimization::kDisabled:
      return ORT_DISABLE_ALL;
    case GraphOptimization::kBasic:
      return ORT_ENABLE_BASIC;
    case GraphOptimization::kExtended:
      return ORT_ENABLE_EXTENDED;
    case GraphOptimization::kAll:
      return ORT_ENABLE_ALL;
  }
  return ORT_ENABLE_EXTENDED;
}

const char* optimization_name(GraphOptimization level) {
  switch (level) {
    case GraphOptimization::kDisabled:
      return "disabled";
    case GraphOptimization::kBasic:
      return "basic";
    case GraphOptimization::kExtended:
      return "extended";
    case GraphOptimization::kAll:
      return "all";
  }
  return "?";
}

TensorInfo describe(const std::string& name, const Ort::TypeInfo& type_info) {
  TensorInfo info;
  info.name = name;
  if (type_info.GetONNXType() == ONNX_TYPE_TENSOR) {
    auto tensor_info = type_info.GetTensorTypeAndShapeInfo();
    info.element_type = tensor_info.GetElementType();
    info.shape = tensor_info.GetShape();
    for (const char* symbol : tensor_info.GetSymbolicDimensions()) {
      info.symbols.emplace_back(symbol != nullptr ? symbol : "");
    }
  }
  return info;
}

float half_to_float(std::uint16_t half) {
  const std::uint32_t sign = static_cast<std::uint32_t>(half & 0x8000u) << 16;
  std::uint32_t exponent = (half >> 10) & 0x1fu;
  std::uint32_t mantissa = half & 0x3ffu;
  std::uint32_t bits = 0;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {  // subnormal: renormalise
      exponent = 127 - 15 + 1;
      while ((mantissa & 0x400u) == 0) {
        mantissa <<= 1;
        --exponent;
      }
      bits = sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13);
    }
  } else if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else {
    bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  float value = 0.f;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

}  // namespace

void check_graph_capture(ProviderId provider, std::string_view field, std::string_view network) {
  const ProviderTraits& chosen = traits(provider);
  if (chosen.graph_capture && !chosen.static_shapes) return;
  std::vector<std::string_view> able;
  for (const ProviderTraits& entry : all_provider_traits()) {
    if (entry.graph_capture && !entry.static_shapes) able.push_back(entry.name);
  }
  fail(
      "{}: {} runs on the {} provider, which cannot replay a captured graph at any input shape; "
      "only {} can (turn {} off, or run {} on one of those)",
      field, network, chosen.name, fmt::join(able, ", "), field, network);
}

void SessionConfig::validate() const {
  if (intra_op_threads < 1) {
    fail("session config: intra_op_threads must be at least 1 (got {})", intra_op_threads);
  }
  if (capture_graph) check_graph_capture(provider, "capture_graph");
}

std::string SessionConfig::to_string() const {
  std::string text = fmt::format("SessionConfig(intra_op_threads={}, optimization={}",
                                 intra_op_threads, optimization_name(optimization));
  if (provider != ProviderId::kCpu || !provider_options.empty()) {
    text += fmt::format(", provider={}", provider_name(provider));
    for (const auto& [key, value] : provider_options) text += fmt::format(", {}={}", key, value);
  }
  if (release_cpu_arena_after_run) text += ", release_cpu_arena_after_run";
  if (capture_graph) text += ", capture_graph";
  if (persistent_buffers) text += ", persistent_buffers";
  if (!compiled_cache_dir.empty()) text += ", compiled_cache_dir=" + compiled_cache_dir.string();
  if (!static_shapes.empty()) text += ", shapes=" + shapes_to_string(static_shapes);
  return text + ")";
}

const char* element_type_name(ONNXTensorElementDataType type) {
  switch (type) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT:
      return "float32";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16:
      return "float16";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE:
      return "float64";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64:
      return "int64";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32:
      return "int32";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8:
      return "int8";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8:
      return "uint8";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL:
      return "bool";
    default:
      return "other";
  }
}

std::string TensorInfo::to_string() const {
  return fmt::format("{} {}[{}]", name, element_type_name(element_type), fmt::join(shape, ","));
}

namespace {

struct EnvironmentState {
  std::mutex mutex;
  std::unique_ptr<Ort::Env> env;
  bool released = false;
  std::atomic<int> live_sessions{0};
};

EnvironmentState& environment_state() {
  // Deliberately never destroyed: a static Ort::Env would be released during exit, after the
  // CUDA runtime, cuBLAS and cuDNN loaded by a provider library have run their own exit-time
  // destructors, and its teardown then frees into torn-down libraries ("malloc(): largebin
  // double linked list corrupted"). shutdown_onnx_runtime() releases it in order instead.
  static auto* state = new EnvironmentState;
  return *state;
}

}  // namespace

LiveSessionToken::LiveSessionToken() { ++environment_state().live_sessions; }
LiveSessionToken::LiveSessionToken(const LiveSessionToken&) { ++environment_state().live_sessions; }
LiveSessionToken::~LiveSessionToken() { --environment_state().live_sessions; }

int live_session_count() { return environment_state().live_sessions.load(); }

Ort::Env& ort_env() {
  auto& state = environment_state();
  std::lock_guard lock(state.mutex);
  if (state.released) {
    fail("ONNX Runtime was already shut down in this process; models cannot be loaded any more");
  }
  // Errors only: ORT's warnings (e.g. about constant folding) say nothing a user can act on,
  // and parley reports model problems itself.
  if (!state.env) state.env = std::make_unique<Ort::Env>(ORT_LOGGING_LEVEL_ERROR, "parley");
  return *state.env;
}

void release_ort_env() {
  auto& state = environment_state();
  std::lock_guard lock(state.mutex);
  state.env.reset();
  state.released = true;
}

void OnnxSession::fail_on_provider(const std::string& model_name, const std::string& error) const {
  fail(
      "{}: ONNX Runtime cannot create a session on {} ({}): {} (check the provider_options "
      "values; the cpu provider runs the model on the CPU)",
      model_name, provider_name(provider_), provider_method_, error);
}

Ort::SessionOptions OnnxSession::make_options(const SessionConfig& config) {
  if (config.release_cpu_arena_after_run) {
    run_options_.AddConfigEntry(kOrtRunOptionsConfigEnableMemoryArenaShrinkage, "cpu:0");
  }
  releasing_run_options_.AddConfigEntry(kOrtRunOptionsConfigEnableMemoryArenaShrinkage, "cpu:0");
  bind_buffers_ = config.persistent_buffers || config.capture_graph;
  capture_graph_ = config.capture_graph;
  Ort::SessionOptions options;
  options.SetIntraOpNumThreads(config.intra_op_threads);
  options.SetInterOpNumThreads(1);
  options.SetGraphOptimizationLevel(to_ort(config.optimization));
  // PARLEY_ORT_PROFILE=PREFIX: ONNX Runtime's per-node profile of every session, written as
  // PREFIX_<date>.json when the session ends (how GPU time was split per operator in
  // docs/benchmarks.md). A diagnostic switch, not an option: it slows every run.
  if (const char* profile_prefix = std::getenv("PARLEY_ORT_PROFILE");
      profile_prefix != nullptr && *profile_prefix != '\0') {
    options.EnableProfiling(profile_prefix);
  }
  for (const auto& [symbol, size] : config.dimension_overrides) {
    options.AddFreeDimensionOverrideByName(symbol.c_str(), size);
  }
  attach(options, config);
  return options;
}

void OnnxSession::attach(Ort::SessionOptions& options, const SessionConfig& config) {
  provider_ = config.provider;
  if (config.provider == ProviderId::kCpu) return;
  const auto& status = find_status(provider_statuses(), config.provider);
  if (!status.available) {
    fail(
        "execution provider {}: unavailable: {} (`parley providers` lists what this machine can "
        "use)",
        provider_name(config.provider), status.reason);
  }
  ProviderOptions provider_options = effective_options(config.provider, config.provider_options);
  if (!config.compiled_cache_dir.empty()) {
    for (auto& [key, value] : cache_options(config.provider, config.compiled_cache_dir,
                                            status.environment.ort_version)) {
      provider_options[key] = value;
    }
  }
  for (auto& [key, value] : static_shape_options(config.provider, config.static_shapes)) {
    provider_options.emplace(key, value);  // the user's explicit profile wins
  }
  if (config.capture_graph) {
    provider_options[std::string(traits(config.provider).graph_capture_option)] = "1";
  }
  provider_method_ =
      attach_provider(options, config.provider, provider_options, status.library).method;
}

namespace {

// Where a new shape's first run must wait for the other runs: on NVIDIA's providers, whose threads
// can be kept out of each other's stream captures (runtime/stream_capture.h), only on its own
// device; elsewhere in the whole process.
std::string new_shape_gate_device(ProviderId provider, const ProviderOptions& options) {
  if (traits(provider).device_vendor != "nvidia" || !stream_capture_isolation_available()) {
    return {};
  }
  return fmt::format("{}:{}", provider_name(provider), device_id_option(options));
}

}  // namespace

std::shared_lock<WriterFirstLock> OnnxSession::create_apart_if_accelerated(
    const SessionConfig& config) {
  if (provider_ == ProviderId::kCpu) return {};
  new_shape_gate_ =
      std::make_unique<NewShapeGate>(new_shape_gate_device(provider_, config.provider_options));
  return NewShapeGate::while_creating_session(new_shape_gate_->device());
}

OnnxSession::OnnxSession(const std::filesystem::path& model_path, const SessionConfig& config)
    : model_path_(model_path) {
  config.validate();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(model_path, ec)) {
    fail("{}: model file not found (see `parley models list` and `parley models fetch`)",
         model_path.string());
  }
  try {
    Ort::SessionOptions options = make_options(config);
    const auto start = std::chrono::steady_clock::now();
    auto apart = create_apart_if_accelerated(config);
    session_ = std::make_unique<Ort::Session>(ort_env(), model_path.c_str(), options);
    log_creation(start);
    describe_inputs_and_outputs();
  } catch (const Ort::Exception& error) {
    if (provider_ != ProviderId::kCpu) {
      fail_on_provider(model_path.string(), error.what());
    }
    fail(
        "{}: ONNX Runtime cannot load this model: {} (is it a complete .onnx file? "
        "`parley models verify` checks it)",
        model_path.string(), error.what());
  }
}

OnnxSession::OnnxSession(const ModelBuffer& model, const SessionConfig& config)
    : model_path_(model.name) {
  config.validate();
  try {
    Ort::SessionOptions options = make_options(config);
    const auto start = std::chrono::steady_clock::now();
    auto apart = create_apart_if_accelerated(config);
    session_ =
        std::make_unique<Ort::Session>(ort_env(), model.bytes.data(), model.bytes.size(), options);
    log_creation(start);
    describe_inputs_and_outputs();
  } catch (const Ort::Exception& error) {
    if (provider_ != ProviderId::kCpu) fail_on_provider(model.name, error.what());
    fail("{}: ONNX Runtime cannot load this in-memory model: {}", model.name, error.what());
  }
}

void OnnxSession::log_creation(std::chrono::steady_clock::time_point start) const {
  // Where a cold start goes (SPDLOG_LEVEL=debug): creation includes waiting for the process's
  // other GPU work to leave the device alone (runtime/new_shape_gate.h).
  spdlog::debug("{}: session on {} created in {:.3f} s", model_path_.string(),
                provider_name(provider_), seconds_since(start));
}

void OnnxSession::describe_inputs_and_outputs() {
  Ort::AllocatorWithDefaultOptions allocator;
  for (std::size_t i = 0; i < session_->GetInputCount(); ++i) {
    inputs_.push_back(describe(session_->GetInputNameAllocated(i, allocator).get(),
                               session_->GetInputTypeInfo(i)));
  }
  for (std::size_t i = 0; i < session_->GetOutputCount(); ++i) {
    outputs_.push_back(describe(session_->GetOutputNameAllocated(i, allocator).get(),
                                session_->GetOutputTypeInfo(i)));
  }
}

std::map<std::string, std::string> OnnxSession::metadata() const {
  std::map<std::string, std::string> properties;
  Ort::AllocatorWithDefaultOptions allocator;
  auto model_metadata = session_->GetModelMetadata();
  for (const auto& key : model_metadata.GetCustomMetadataMapKeysAllocated(allocator)) {
    auto value = model_metadata.LookupCustomMetadataMapAllocated(key.get(), allocator);
    properties.emplace(key.get(), value ? value.get() : "");
  }
  return properties;
}

namespace {
std::string shape_key(const std::vector<std::vector<std::int64_t>>& input_shapes) {
  return fmt::format("{}", input_shapes);
}

// A run of `model` on the calling thread's trace lane (core/trace.h), when one is bound: the
// device's work as the host sees it, named by the model's file (and its part, for a model held
// in memory), with the batch (the first input's first dimension) and the input shapes.
void trace_run(const TraceLane& lane, const std::filesystem::path& model,
               const std::vector<std::vector<std::int64_t>>& input_shapes,
               std::chrono::steady_clock::time_point start,
               std::chrono::steady_clock::time_point end) {
  TraceArgs args;
  if (lane.recordings != nullptr) args.recordings = *lane.recordings;
  if (!input_shapes.empty() && !input_shapes.front().empty()) {
    args.number("batch", static_cast<double>(input_shapes.front().front()));
  }
  args.text("shapes", shape_key(input_shapes));
  lane.recorder->complete(model.filename().string(), kTraceModel, lane.pid, lane.tid, start, end,
                          std::move(args));
}
}  // namespace

NdArray<float> OnnxSession::host_array(const Ort::Value& value,
                                       const std::string& output_name) const {
  auto shape_info = value.GetTensorTypeAndShapeInfo();
  std::vector<std::size_t> shape;
  for (auto dim : shape_info.GetShape()) shape.push_back(static_cast<std::size_t>(dim));
  NdArray<float> result(shape);
  const std::size_t count = shape_info.GetElementCount();
  switch (shape_info.GetElementType()) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT:
      // An empty output may come with a null data pointer, which memcpy must not be given.
      std::copy_n(value.GetTensorData<float>(), count, result.data());
      break;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16: {
      const auto* halves = value.GetTensorData<std::uint16_t>();
      for (std::size_t j = 0; j < count; ++j) result(j) = half_to_float(halves[j]);
      break;
    }
    default:
      fail("{}: output '{}' has element type {}, parley expects float32 or float16",
           model_path_.string(), output_name, element_type_name(shape_info.GetElementType()));
  }
  return result;
}

std::vector<NdArray<float>> OnnxSession::run(
    const std::vector<std::pair<std::string, const NdArray<float>*>>& named_inputs,
    const std::vector<std::string>& output_names, bool release_cpu_arena) {
  const TraceLane& lane = current_trace_lane();
  if (bind_buffers_) {
    if (!lane) return run_bound(named_inputs, output_names);
    const auto start = std::chrono::steady_clock::now();
    std::vector<NdArray<float>> results = run_bound(named_inputs, output_names);
    std::vector<std::vector<std::int64_t>> input_shapes;
    input_shapes.reserve(named_inputs.size());
    for (const auto& [name, array] : named_inputs) {
      input_shapes.emplace_back(array->shape().begin(), array->shape().end());
    }
    trace_run(lane, model_path_, input_shapes, start, std::chrono::steady_clock::now());
    return results;
  }
  auto memory = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
  std::vector<Ort::Value> input_values;
  std::vector<const char*> input_names;
  std::vector<std::vector<std::int64_t>> input_shapes;
  for (const auto& [name, array] : named_inputs) {
    input_shapes.emplace_back(array->shape().begin(), array->shape().end());
    // ORT does not write to inputs; the const_cast only satisfies its C signature.
    input_values.push_back(
        Ort::Value::CreateTensor<float>(memory, const_cast<float*>(array->data()), array->size(),
                                        input_shapes.back().data(), input_shapes.back().size()));
    input_names.push_back(name.c_str());
  }
  std::vector<const char*> output_name_pointers;
  for (const auto& name : output_names) output_name_pointers.push_back(name.c_str());

  std::vector<Ort::Value> output_values;
  std::optional<NewShapeGate::Pass> pass;
  const auto waiting_since = std::chrono::steady_clock::now();
  if (new_shape_gate_) pass.emplace(new_shape_gate_->enter(shape_key(input_shapes)));
  const auto run_start = std::chrono::steady_clock::now();
  try {
    output_values = session_->Run(release_cpu_arena ? releasing_run_options_ : run_options_,
                                  input_names.data(), input_values.data(), input_values.size(),
                                  output_name_pointers.data(), output_name_pointers.size());
  } catch (const Ort::Exception& error) {
    fail("{}: inference failed: {}", model_path_.string(), error.what());
  }
  if (lane) {
    // A wait at the new-shape gate (runtime/new_shape_gate.h) holds the device's work back.
    if (run_start - waiting_since > std::chrono::microseconds(100)) {
      lane.recorder->complete("waiting at the new-shape gate", kTraceWait, lane.pid, lane.tid,
                              waiting_since, run_start);
    }
    trace_run(lane, model_path_, input_shapes, run_start, std::chrono::steady_clock::now());
  }
  if (pass) {
    if (pass->alone()) {
      spdlog::debug("{}: first run of {} ran alone in {:.3f} s after waiting {:.3f} s",
                    model_path_.string(), shape_key(input_shapes), seconds_since(run_start),
                    std::chrono::duration<double>(run_start - waiting_since).count());
    }
    pass->succeeded();
  }
  pass.reset();

  std::vector<NdArray<float>> results;
  for (std::size_t i = 0; i < output_values.size(); ++i) {
    results.push_back(host_array(output_values[i], output_names[i]));
  }
  return results;
}

}  // namespace parley::runtime

namespace parley::runtime {

struct OnnxSession::BoundShape {
  int id = 0;  // the graph's annotation (ONNX Runtime's gpu_graph_id run option)
  Ort::RunOptions run_options;
  Ort::IoBinding binding{nullptr};
  // The buffers bound as the session's inputs, where the session wants each (the device, or the
  // host for an input only host nodes read), and whether that is host memory.
  std::vector<Ort::Value> inputs;
  std::vector<bool> input_on_host;
  // Where the outputs lay after the first run (which captured the graph, if any): the session
  // writes there again on every run, and a replay could write nowhere else.
  std::vector<const void*> output_addresses;
};

namespace {

std::size_t index_of(const std::vector<TensorInfo>& tensors, const std::string& name,
                     const std::string& model, const char* what) {
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].name == name) return i;
  }
  fail("{}: the model has no {} named '{}'", model, what, name);
}

bool on_host(const Ort::ConstMemoryInfo& memory) {
  return memory.GetDeviceType() == OrtMemoryInfoDeviceType_CPU;
}

// Copies between the host and the provider's device through the provider's own data transfer
// (the environment's, registered with the provider library): no CUDA call of parley's own.
void copy_tensors(std::vector<const OrtValue*> from, std::vector<OrtValue*> to) {
  if (from.empty()) return;
  Ort::ThrowOnError(Ort::GetApi().CopyTensors(ort_env(), from.data(), to.data(),
                                              /*stream=*/nullptr, from.size()));
}

}  // namespace

OnnxSession::~OnnxSession() = default;

std::size_t OnnxSession::bound_shapes() const {
  std::lock_guard lock(bound_mutex_);
  return bound_.size();
}

OnnxSession::BoundShape& OnnxSession::bound_shape(
    const std::string& key,
    const std::vector<std::pair<std::string, const NdArray<float>*>>& named_inputs,
    const std::vector<std::vector<std::int64_t>>& input_shapes,
    const std::vector<std::string>& output_names) {
  if (const auto found = bound_.find(key); found != bound_.end()) return *found->second;
  if (input_allocators_.empty()) {
    for (const auto& memory : session_->GetMemoryInfoForInputs()) {
      input_allocators_.emplace_back(*session_, memory);
    }
  }
  auto graph = std::make_unique<BoundShape>();
  graph->id = static_cast<int>(bound_.size());
  if (capture_graph_) {
    graph->run_options.AddConfigEntry(kOrtRunOptionsConfigCudaGraphAnnotation,
                                      std::to_string(graph->id).c_str());
  }
  graph->binding = Ort::IoBinding(*session_);
  for (std::size_t i = 0; i < named_inputs.size(); ++i) {
    const std::string& name = named_inputs[i].first;
    Ort::Allocator& allocator =
        input_allocators_.at(index_of(inputs_, name, model_path_.string(), "input"));
    graph->inputs.push_back(
        Ort::Value::CreateTensor<float>(allocator, input_shapes[i].data(), input_shapes[i].size()));
    graph->input_on_host.push_back(on_host(allocator.GetInfo()));
    graph->binding.BindInput(name.c_str(), graph->inputs.back());
  }
  const auto output_memory = session_->GetMemoryInfoForOutputs();
  for (const std::string& name : output_names) {
    graph->binding.BindOutput(
        name.c_str(), output_memory.at(index_of(outputs_, name, model_path_.string(), "output")));
  }
  spdlog::debug("{}: buffers {} for inputs {}{}", model_path_.string(), graph->id, key,
                capture_graph_ ? ", captured at their first run" : "");
  return *bound_.emplace(key, std::move(graph)).first->second;
}

std::vector<NdArray<float>> OnnxSession::run_bound(
    const std::vector<std::pair<std::string, const NdArray<float>*>>& named_inputs,
    const std::vector<std::string>& output_names) {
  std::vector<std::vector<std::int64_t>> input_shapes;
  input_shapes.reserve(named_inputs.size());
  for (const auto& [name, array] : named_inputs) {
    input_shapes.emplace_back(array->shape().begin(), array->shape().end());
  }
  const std::string key = fmt::format("{} -> {}", shape_key(input_shapes), output_names);
  // The buffers (and a captured graph, which reads and writes the same memory on every replay)
  // serve one run at a time.
  std::lock_guard lock(bound_mutex_);
  try {
    BoundShape& graph = bound_shape(key, named_inputs, input_shapes, output_names);
    // ONNX Runtime's CUDA provider captures per calling thread: a thread's first run of these
    // buffers captures a graph of its own, in CUDA's global mode, which any other thread's
    // unsafe call (an allocation, a synchronising copy) breaks. So each thread's first run goes
    // alone (runtime/new_shape_gate.h), and the copies in and out go inside the gate too.
    std::optional<NewShapeGate::Pass> pass;
    if (new_shape_gate_) {
      std::ostringstream thread;
      thread << std::this_thread::get_id();
      pass.emplace(
          new_shape_gate_->enter(capture_graph_ ? key + " on thread " + thread.str() : key));
    }
    const auto host = Ort::MemoryInfo::CreateCpu(OrtDeviceAllocator, OrtMemTypeDefault);
    std::vector<Ort::Value> sources;
    sources.reserve(named_inputs.size());
    std::vector<const OrtValue*> from;
    std::vector<OrtValue*> to;
    for (std::size_t i = 0; i < named_inputs.size(); ++i) {
      const NdArray<float>& array = *named_inputs[i].second;
      if (graph.input_on_host[i]) {
        std::copy_n(array.data(), array.size(), graph.inputs[i].GetTensorMutableData<float>());
        continue;
      }
      // ORT does not write to a copy's source; the const_cast only satisfies its C signature.
      sources.push_back(Ort::Value::CreateTensor<float>(host, const_cast<float*>(array.data()),
                                                        array.size(), input_shapes[i].data(),
                                                        input_shapes[i].size()));
      from.push_back(sources.back());
      to.push_back(graph.inputs[i]);
    }
    copy_tensors(std::move(from), std::move(to));

    const auto run_start = std::chrono::steady_clock::now();
    // The first run of a shape (on a thread) runs the model until the provider has captured it;
    // later runs replay that graph.
    session_->Run(graph.run_options, graph.binding);
    if (pass && pass->alone()) {
      spdlog::debug("{}: first run of buffers {} ran alone in {:.3f} s", model_path_.string(),
                    graph.id, seconds_since(run_start));
    }

    std::vector<Ort::Value> outputs = graph.binding.GetOutputValues();
    if (graph.output_addresses.empty()) {
      for (const auto& output : outputs)
        graph.output_addresses.push_back(output.GetTensorRawData());
    }
    std::vector<NdArray<float>> results;
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      if (outputs[i].GetTensorRawData() != graph.output_addresses.at(i)) {
        fail("{}: output '{}' of bound buffers {} moved between runs", model_path_.string(),
             output_names[i], graph.id);
      }
      if (on_host(outputs[i].GetTensorMemoryInfo())) {
        results.push_back(host_array(outputs[i], output_names[i]));
        continue;
      }
      // Through a host tensor of the output's own type and shape, then as run() converts.
      auto info = outputs[i].GetTensorTypeAndShapeInfo();
      const std::vector<std::int64_t> dims = info.GetShape();
      std::size_t element_bytes = 4;
      if (info.GetElementType() == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16) {
        element_bytes = 2;
      } else if (info.GetElementType() != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) {
        fail("{}: output '{}' has element type {}, parley expects float32 or float16",
             model_path_.string(), output_names[i], element_type_name(info.GetElementType()));
      }
      const std::size_t bytes = info.GetElementCount() * element_bytes;
      std::vector<std::byte> staging(bytes);
      Ort::Value copy = Ort::Value::CreateTensor(host, staging.data(), bytes, dims.data(),
                                                 dims.size(), info.GetElementType());
      if (bytes > 0) copy_tensors({outputs[i]}, {copy});
      results.push_back(host_array(copy, output_names[i]));
    }
    if (pass) pass->succeeded();
    return results;
  } catch (const Ort::Exception& error) {
    fail("{}: inference through bound buffers{} failed: {}", model_path_.string(),
         capture_graph_ ? " and a captured graph" : "", error.what());
  }
}

}  // namespace parley::runtime
