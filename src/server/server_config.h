#pragma once
// What `parley serve` was started with: where it listens, where it keeps its jobs, the limits it
// puts on clients, and the option values its engine runs with (fixed at start: a job may name
// them, and must then name the same values).
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "pipeline/option_table.h"

namespace parley::server {

// 127.0.0.0/8, ::1 and localhost: reachable only from this machine.
bool is_loopback(const std::string& host);

struct ServerConfig {
  std::string host = "127.0.0.1";   // loopback: put a reverse proxy in front to serve others
  int port = 8080;                  // 0: any free port (the chosen one is logged)
  std::filesystem::path state_dir;  // jobs, uploads and results; survives restarts
  std::size_t max_queue = 1000;     // queued jobs; more are answered 429
  std::size_t max_upload_bytes = std::size_t{1} << 30;
  double max_audio_seconds = 4.0 * 3600.0;
  // POST /v1/diarize holds a connection open while it runs: longer audio goes to /v1/jobs.
  double max_sync_audio_seconds = 600.0;
  std::string token;  // empty: no authentication
  // Listening beyond loopback without a token is refused unless this is set.
  bool insecure = false;
  std::filesystem::path allow_paths;  // empty: clients cannot name server files
  // Requests whose bodies are read at once (each may hold an upload in memory).
  int http_threads = 8;
  // Connections served at once, and from one client address (a reverse proxy is one address);
  // beyond either a connection is answered only for /v1/health, 503 otherwise.
  int max_connections = 64;
  int max_client_connections = 32;
  // A request's line and headers must arrive within header_timeout_seconds; a body may pause,
  // and a client may leave the answer untaken, at most read_timeout_seconds.
  double header_timeout_seconds = 10.0;
  double read_timeout_seconds = 30.0;
  // Live streams (/v1/stream) open at once; more are answered 503. Each holds one of the
  // max_connections for as long as it streams (0: no live streams).
  int max_streams = 8;
  // Whether a live stream may ask final_recluster: its batch diarization at the stream's end
  // holds the shared models (every other live stream waits), and its audio waits in a temporary
  // file meanwhile (16 kHz float32: about 230 MB an hour). Refused (400) when false.
  bool allow_final_recluster = true;
  // The option values the engine was configured with, by the option table's names
  // (pipeline/option_values.h; an absent name is the table's default): fixed when the server
  // starts. A job's own values (the table's per_job options) are applied over them.
  nlohmann::json engine_values = nlohmann::json::object();

  void validate() const;
  std::string to_string() const;  // for the log; never shows the token
  // The table's server options that a job cannot set (not per_job), with the values in
  // engine_values: what a job naming one of them must equal, and what GET /v1/health lists.
  nlohmann::json fixed_settings() const;
  // engine_values' embedding_mode (the table's default when absent): what voiceprints record.
  std::string embedding_mode() const;
};

}  // namespace parley::server
