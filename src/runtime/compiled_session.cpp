#include "runtime/compiled_session.h"

#include <fmt/format.h>

#include <chrono>

#include "core/error.h"
#include "core/stage_timer.h"

namespace parley::runtime {
namespace {}  // namespace

void run_on_zeros(OnnxSession& session, const std::vector<InputShape>& shapes) {
  std::vector<NdArray<float>> arrays;
  arrays.reserve(shapes.size());
  for (const auto& shape : shapes) {
    std::vector<std::size_t> dims;
    for (auto dim : shape.dims) dims.push_back(static_cast<std::size_t>(dim));
    arrays.emplace_back(dims, 0.f);
  }
  std::vector<std::pair<std::string, const NdArray<float>*>> inputs;
  for (std::size_t i = 0; i < shapes.size(); ++i) inputs.emplace_back(shapes[i].name, &arrays[i]);
  std::vector<std::string> outputs;
  for (const auto& output : session.outputs()) outputs.push_back(output.name);
  session.run(inputs, outputs);
}

CompiledSession open_compiled_session(CompileCache& cache, const ProviderStatus& status,
                                      const CompiledSessionRequest& request,
                                      const SessionFactory& factory) {
  const SessionFactory create =
      factory ? factory
              : [](const std::filesystem::path& model, const SessionConfig& session_config) {
                  return std::make_unique<OnnxSession>(model, session_config);
                };
  CompiledSession result;
  SessionConfig config = request.config;
  config.provider = status.id;
  config.static_shapes = request.shapes;
  config.dimension_overrides = request.dimension_overrides;
  const ProviderOptions options = effective_options(status.id, config.provider_options);
  result.key = make_compile_key(request.model_sha256, request.model.stem().string(), request.shapes,
                                status.id, options, status.environment);
  const auto start = std::chrono::steady_clock::now();
  if (traits(status.id).cache_kind == CompiledCacheKind::kNone) {
    result.session = create(request.model, config);
    result.seconds = seconds_since(start);
    return result;
  }

  auto lookup = cache.lookup(result.key);
  if (!lookup.note.empty()) result.notes.push_back(lookup.note);
  if (lookup.hit) {
    try {
      config.compiled_cache_dir = lookup.artifacts_dir;
      result.session = create(request.model, config);
      run_on_zeros(*result.session, request.shapes);
      result.cache_hit = true;
      result.cached = true;
      result.seconds = seconds_since(start);
      result.cache_bytes =
          inspect_entry(cache.entry_dir(result.key), Verification::kSizes).bytes_on_disk;
      return result;
    } catch (const Error& error) {
      result.session.reset();
      cache.invalidate(result.key);
      result.notes.push_back(
          fmt::format("{}: {} could not use its cached compiled graph for {} ({}); rebuilding it",
                      result.key.model_name, provider_name(status.id),
                      shapes_to_string(request.shapes), error.what()));
    }
  }

  auto build = cache.begin_build(result.key);
  config.compiled_cache_dir = build.artifacts_dir();
  const auto build_start = std::chrono::steady_clock::now();
  result.session = create(request.model, config);
  run_on_zeros(*result.session, request.shapes);
  const double build_seconds = seconds_since(build_start);
  try {
    const auto entry = build.commit(build_seconds);
    result.cached = true;
    result.cache_bytes = entry.bytes_on_disk;
  } catch (const Error& error) {
    // The session works; only reuse is lost. Say so instead of failing the run.
    result.notes.push_back(error.what());
  }
  result.seconds = seconds_since(start);
  return result;
}

}  // namespace parley::runtime
