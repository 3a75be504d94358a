#pragma once
// One ONNX Runtime session per model and settings on an accelerator, run by all its users at
// once: the segmentation workers of an engine, and the engines that share a GPU. ONNX Runtime's
// CUDA and ROCm providers run concurrent Run() calls of one session on separate streams (the
// providers whose ProviderTraits::concurrent_runs says so; not with a captured graph, nor on
// DirectML, whose sessions stay one per user), so sharing costs no overlap,
// and a shape's kernels are chosen once in the process instead of once per session: those first
// runs go one at a time (runtime/new_shape_gate.h) and were most of a corpus's warm-up with
// three engines of two segmentation sessions each (docs/corpus.md). Sessions on the CPU are
// not shared: each worker keeps its own session, arena and single intra-op thread.
#include <cstddef>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "runtime/onnx_session.h"

namespace parley::runtime {

class SessionShare {
 public:
  enum class Scope {
    kAccelerators,  // sessions on a dynamic-shape accelerator (CUDA, ROCm, ...)
    // CPU sessions too: ONNX Runtime's CPU sessions also take concurrent runs (tests use it,
    // having no accelerator)
    kEverySession,
  };
  explicit SessionShare(Scope scope = Scope::kAccelerators) : scope_(scope) {}

  // The session of this model with `config`: the one opened earlier through this share when
  // the model's bytes and the settings are the same and the scope covers the provider, else a
  // new one. Throws as OnnxSession does (and keeps nothing then).
  std::shared_ptr<OnnxSession> open(const ModelBuffer& model, const SessionConfig& config);
  std::shared_ptr<OnnxSession> open(const std::filesystem::path& model_path,
                                    const SessionConfig& config);

  // Sessions opened through the share and held by it.
  std::size_t size() const;
  // Whether sessions with `config` are shared: the scope covers the provider, whose sessions
  // take concurrent runs (ProviderTraits::concurrent_runs) of any shape, and no captured graph
  // is asked for.
  bool shares(const SessionConfig& config) const;

 private:
  std::shared_ptr<OnnxSession> find_or_open(
      const std::string& key, const std::function<std::shared_ptr<OnnxSession>()>& open_new);

  Scope scope_;
  mutable std::mutex mutex_;
  // A key's session while it is being created too: engines of different devices create theirs
  // at once, and a second user of a key waits for the first's session (or its error).
  std::map<std::string, std::shared_future<std::shared_ptr<OnnxSession>>> sessions_;
};

}  // namespace parley::runtime
