#include "runtime/session_share.h"

#include <fmt/format.h>

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
  // Held while a session is created: two users asking at once get one session. Creating a GPU
  // session goes alone in the process anyway (runtime/new_shape_gate.h).
  std::lock_guard lock(mutex_);
  if (const auto found = sessions_.find(key); found != sessions_.end()) return found->second;
  auto session = open_new();
  sessions_.emplace(key, session);
  return session;
}

std::size_t SessionShare::size() const {
  std::lock_guard lock(mutex_);
  return sessions_.size();
}

}  // namespace parley::runtime
