#include "runtime/shaped_session_pool.h"

#include <spdlog/spdlog.h>

#include <utility>

#include "runtime/provider.h"
#include "runtime/provider_discovery.h"

namespace parley::runtime {

ShapedSessionPool::ShapedSessionPool(const std::filesystem::path& cache_root, SessionConfig config,
                                     SessionFactory factory)
    : cache_(CompileCache::root_or_default(cache_root)),
      config_(std::move(config)),
      factory_(std::move(factory)) {}

OnnxSession& ShapedSessionPool::session_for(
    const ShapedModel& model, const std::vector<InputShape>& shapes,
    const std::map<std::string, std::int64_t>& dimension_overrides) {
  auto& session = sessions_[model.sha256 + " " + shapes_to_string(shapes)];
  if (session) return *session;
  CompiledSessionRequest request;
  request.model = model.path;
  request.model_sha256 = model.sha256;
  request.config = config_;
  request.shapes = shapes;
  request.dimension_overrides = dimension_overrides;
  auto compiled = open_compiled_session(cache_, find_status(provider_statuses(), config_.provider),
                                        request, factory_);
  for (const auto& note : compiled.notes) spdlog::info("{}", note);
  spdlog::debug("{}: {} on {}: {} in {:.2f} s", model.label, shapes_to_string(shapes),
                provider_name(config_.provider),
                compiled.cache_hit ? "compiled graph from the cache" : "compiled",
                compiled.seconds);
  session = std::move(compiled.session);
  opened_shapes_.push_back(shapes);
  return *session;
}

}  // namespace parley::runtime
