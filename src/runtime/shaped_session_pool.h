#pragma once
// One session per input shape, opened through the compiled-graph cache on first use: what a
// static-shape provider (MIGraphX, TensorRT) needs, since each compiled graph takes one shape,
// and what bucketed batches use on any provider. Shared by the segmentation and embedding
// stages; not thread-safe (each user calls it from one thread).
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/compile_cache.h"
#include "runtime/compiled_session.h"
#include "runtime/onnx_session.h"
#include "runtime/shape_plan.h"

namespace parley::runtime {

// A model file as the compiled-graph cache keys it.
struct ShapedModel {
  std::filesystem::path path;
  std::string sha256;  // sha256_file(path), computed once by the caller
  std::string label;   // names the model in log lines
};

class ShapedSessionPool {
 public:
  // `cache_root` empty: CompileCache::default_root(). `factory` (tests) stands in for the
  // provider; null: OnnxSession on config.provider.
  ShapedSessionPool(const std::filesystem::path& cache_root, SessionConfig config,
                    SessionFactory factory = nullptr);

  // The session of `model` at `shapes` (`dimension_overrides` pin its symbolic axes), compiled
  // or taken from the cache the first time this model and shape are asked for.
  OnnxSession& session_for(const ShapedModel& model, const std::vector<InputShape>& shapes,
                           const std::map<std::string, std::int64_t>& dimension_overrides);

  // The shapes opened so far, in the order they were opened.
  const std::vector<std::vector<InputShape>>& opened_shapes() const { return opened_shapes_; }

 private:
  CompileCache cache_;
  SessionConfig config_;
  SessionFactory factory_;
  std::map<std::string, std::unique_ptr<OnnxSession>> sessions_;  // by model digest and shapes
  std::vector<std::vector<InputShape>> opened_shapes_;
};

}  // namespace parley::runtime
