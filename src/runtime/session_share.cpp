#include "runtime/session_share.h"

#include <fmt/format.h>

#include <exception>

#include "core/sha256.h"

namespace parley::runtime {

namespace {

std::string settings_key(const SessionConfig& config) {
  std::string key = config.to_string();
  for (const auto& [dimension, size] : config.dimension_overrides) {
    key += fmt::format(" {}={}", dimension, size);
  }
  return key;
}

}  // namespace

bool SessionShare::shares(const SessionConfig& config) const {
  const ProviderTraits& provider = traits(config.provider);
  // Static-shape providers compile a session per shape (runtime/shaped_session_pool.h).
  if (!provider.concurrent_runs || provider.static_shapes) return false;
  // A captured graph replays one run at a time.
  if (config.capture_graph) return false;
  if (!provider.graph_capture_option.empty()) {
    const auto option = config.provider_options.find(std::string(provider.graph_capture_option));
    if (option != config.provider_options.end() && option->second != "0" &&
        option->second != "false") {
      return false;
    }
  }
  return scope_ == Scope::kEverySession || config.provider != ProviderId::kCpu;
}

std::shared_ptr<OnnxSession> SessionShare::open(const ModelBuffer& model,
                                                const SessionConfig& config) {
  const auto open_new = [&] { return std::make_shared<OnnxSession>(model, config); };
  if (!shares(config)) return open_new();
  return find_or_open(sha256_text(model.bytes) + " " + settings_key(config), open_new);
}

std::shared_ptr<OnnxSession> SessionShare::open(const std::filesystem::path& model_path,
                                                const SessionConfig& config) {
  const auto open_new = [&] { return std::make_shared<OnnxSession>(model_path, config); };
  if (!shares(config)) return open_new();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(model_path, ec)) return open_new();  // its error
  return find_or_open(sha256_file(model_path) + " " + settings_key(config), open_new);
}

std::shared_ptr<OnnxSession> SessionShare::find_or_open(
    const std::string& key, const std::function<std::shared_ptr<OnnxSession>()>& open_new) {
  // Two users asking for one key at once get one session; sessions of other keys (another
  // device's, another model's) are created meanwhile, outside the mutex.
  std::promise<std::shared_ptr<OnnxSession>> promise;
  std::shared_future<std::shared_ptr<OnnxSession>> earlier;
  {
    std::lock_guard lock(mutex_);
    if (const auto found = sessions_.find(key); found != sessions_.end()) {
      earlier = found->second;
    } else {
      sessions_.emplace(key, promise.get_future().share());
    }
  }
  if (earlier.valid()) return earlier.get();
  try {
    auto session = open_new();
    promise.set_value(session);
    return session;
  } catch (...) {
    // Keeps nothing: a later user of the key tries again; those waiting now get this error.
    promise.set_exception(std::current_exception());
    std::lock_guard lock(mutex_);
    sessions_.erase(key);
    throw;
  }
}

std::size_t SessionShare::size() const {
  std::lock_guard lock(mutex_);
  return sessions_.size();
}

}  // namespace parley::runtime
