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

#include <onnxruntime_run_options_config_keys.h>

#include <spdlog/spdlog.h>

#include "core/error.h"
#include "core/stage_timer.h"
#include "runtime/compile_cache.h"
#include "runtime/provider_attach.h"
#include "runtime/provider_discovery.h"

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

void SessionConfig::validate() const {
  if (intra_op_threads < 1) {
    fail("session config: intra_op_threads must be at least 1 (got {})", intra_op_threads);
  }
}

std::string SessionConfig::to_string() const {
  std::string text = fmt::format("SessionConfig(intra_op_threads={}, optimization={}",
                                 intra_op_threads, optimization_name(optimization));
  if (provider != ProviderId::kCpu || !provider_options.empty()) {
    text += fmt::format(", provider={}", provider_name(provider));
    for (const auto& [key, value] : provider_options) text += fmt::format(", {}={}", key, value);
  }
  if (release_cpu_arena_after_run) text += ", release_cpu_arena_after_run";
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
  provider_method_ =
      attach_provider(options, config.provider, provider_options, status.library).method;
}

std::shared_lock<WriterFirstLock> OnnxSession::create_apart_if_accelerated() {
  if (provider_ == ProviderId::kCpu) return {};
  new_shape_gate_ = std::make_unique<NewShapeGate>();
  return NewShapeGate::while_creating_session();
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
    auto apart = create_apart_if_accelerated();
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
    auto apart = create_apart_if_accelerated();
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
}  // namespace

std::vector<NdArray<float>> OnnxSession::run(
    const std::vector<std::pair<std::string, const NdArray<float>*>>& named_inputs,
    const std::vector<std::string>& output_names, bool release_cpu_arena) {
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
    auto shape_info = output_values[i].GetTensorTypeAndShapeInfo();
    std::vector<std::size_t> shape;
    for (auto dim : shape_info.GetShape()) shape.push_back(static_cast<std::size_t>(dim));
    NdArray<float> result(shape);
    const std::size_t count = shape_info.GetElementCount();
    switch (shape_info.GetElementType()) {
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT:
        // An empty output may come with a null data pointer, which memcpy must not be given.
        std::copy_n(output_values[i].GetTensorData<float>(), count, result.data());
        break;
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16: {
        const auto* halves = output_values[i].GetTensorData<std::uint16_t>();
        for (std::size_t j = 0; j < count; ++j) result(j) = half_to_float(halves[j]);
        break;
      }
      default:
        fail("{}: output '{}' has element type {}, parley expects float32 or float16",
             model_path_.string(), output_names[i], element_type_name(shape_info.GetElementType()));
    }
    results.push_back(std::move(result));
  }
  return results;
}

}  // namespace parley::runtime
