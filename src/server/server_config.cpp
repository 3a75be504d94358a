#include "server/server_config.h"

#include <fmt/format.h>

#include "core/error.h"

namespace parley::server {

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

void ServerConfig::validate() const {
  if (host.empty()) fail("server host: empty (use 127.0.0.1 for this machine only)");
  if (port < 0 || port > 65535) fail("server port must be in [0, 65535] (got {})", port);
  if (state_dir.empty()) fail("server state_dir: name a folder for jobs and results");
  if (max_queue < 1) fail("server max_queue must be at least 1");
  if (max_upload_bytes < 1024) fail("server max_upload_bytes must be at least 1024");
  if (!(max_audio_seconds > 0.0)) fail("server max_audio_seconds must be positive");
  if (!(max_sync_audio_seconds > 0.0)) fail("server max_sync_audio_seconds must be positive");
  if (http_threads < 1 || http_threads > 256) {
    fail("server http_threads must be in [1, 256] (got {})", http_threads);
  }
  if (max_connections < 1 || max_connections > 4096) {
    fail("server max_connections must be in [1, 4096] (got {})", max_connections);
  }
  // More than max_connections is allowed: the connections are then the limit.
  if (max_streams < 0) fail("server max_streams must be at least 0 (got {})", max_streams);
  if (max_client_connections < 1) fail("server max_client_connections must be at least 1");
  if (!(header_timeout_seconds > 0.0) || !(read_timeout_seconds > 0.0)) {
    fail("server header_timeout_seconds and read_timeout_seconds must be positive");
  }
  if (token.empty() && !insecure && !is_loopback(host)) {
    fail(
        "server host {}: listening beyond this machine without a token lets anyone who can "
        "reach it use the server; set a token, or set insecure to accept that",
        host);
  }
  if (!engine_values.is_object()) fail("server engine_values: expected an object of option values");
  for (const auto& [name, value] : engine_values.items()) {
    try {
      pipeline::diarization_option(name).check_value(value);
    } catch (const Error& error) {
      fail("server {}", error.what());
    }
  }
  if (!allow_paths.empty() && !std::filesystem::is_directory(allow_paths)) {
    fail("server allow_paths {}: not a folder", allow_paths.string());
  }
}

std::string ServerConfig::to_string() const {
  return fmt::format(
      "host {}, port {}, state_dir {}, max_queue {}, max_upload {:.0f} MiB, max_audio {:.2f} h, "
      "max_sync_audio {:.0f} s, token {}, allow_paths {}, http_threads {}, max_connections {} ({} "
      "a client), max_streams {}, final_recluster {}, header_timeout {} s, read_timeout {} s, "
      "fixed settings {}",
      host, port, state_dir.string(), max_queue,
      static_cast<double>(max_upload_bytes) / (1024.0 * 1024.0), max_audio_seconds / 3600.0,
      max_sync_audio_seconds, token.empty() ? "none" : "set",
      allow_paths.empty() ? "none" : allow_paths.string(), http_threads, max_connections,
      max_client_connections, max_streams, allow_final_recluster ? "allowed" : "refused",
      header_timeout_seconds, read_timeout_seconds, fixed_settings().dump());
}

nlohmann::json ServerConfig::fixed_settings() const {
  nlohmann::json fixed = nlohmann::json::object();
  for (const pipeline::OptionSpec& spec : pipeline::diarization_options()) {
    if (!spec.faces.server || spec.per_job) continue;
    const auto found = engine_values.find(spec.name);
    fixed[spec.name] =
        found != engine_values.end() && !found->is_null() ? *found : spec.default_value;
  }
  return fixed;
}

std::string ServerConfig::embedding_mode() const {
  const auto found = engine_values.find("embedding_mode");
  return found != engine_values.end() && !found->is_null()
             ? found->get<std::string>()
             : pipeline::diarization_option("embedding_mode").default_value.get<std::string>();
}

}  // namespace parley::server
