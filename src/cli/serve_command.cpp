// `parley serve`: the diarization service (src/server) behind the command line. Models load
// once; jobs come over HTTP and are kept under --state-dir across restarts.
#include <pthread.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "cli/diarization_options.h"
#include "cli/diarize_corpus.h"
#include "cli/identity_options.h"
#include "core/error.h"
#include "corpus/corpus_engine.h"
#include "corpus/engine_layout.h"
#include "identity/voiceprint.h"
#include "models/speed_twin.h"
#include "server/http_api.h"
#include "server/job_queue.h"
#include "server/job_store.h"
#include "server/metrics.h"
#include "server/server_config.h"
#include "server/stream_diarizer_session.h"

namespace parley::cli {
namespace {

struct ServeArguments {
  server::ServerConfig config;
  DiarizationFlags flags;
  EngineFlags engine;
  std::string devices;
  int engines = 0;  // 0: automatic (corpus::plan_engine_layout)
  int jobs = pipeline::kDefaultCorpusJobs;
  double max_upload_mb = 1024.0;
  double max_audio_hours = 4.0;
  std::string token_file;
  double retain_days = 30.0;
  bool keep_uploads = false;
  std::string voiceprints;  // speaker library: every result names the speakers it matches
  double identify_threshold = identity::kDefaultThreshold;
};

// The first line of the file, which must hold something: an empty token would let anyone in. A
// regular file only (not /dev/zero or a pipe), and a line of reasonable length.
std::string read_token(const std::string& path) {
  constexpr std::size_t kMaxToken = 4096;
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    fail("--token-file {}: not a regular file; put the token in one", path);
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) fail("--token-file {}: cannot read it", path);
  std::string head(kMaxToken + 2, '\0');
  file.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(file.gcount()));
  std::string token = head.substr(0, head.find('\n'));
  while (!token.empty() && (token.back() == '\r' || token.back() == ' ')) token.pop_back();
  if (token.empty()) fail("--token-file {}: the first line is empty; put the token there", path);
  if (token.size() > kMaxToken) {
    fail("--token-file {}: the first line is longer than {} bytes; use a shorter token", path,
         kMaxToken);
  }
  return token;
}

void run_serve(ServeArguments& arguments) {
  server::ServerConfig& config = arguments.config;
  if (arguments.max_upload_mb < 1.0) fail("--max-upload-mb must be at least 1");
  config.max_upload_bytes = static_cast<std::size_t>(arguments.max_upload_mb * 1024.0 * 1024.0);
  config.max_audio_seconds = arguments.max_audio_hours * 3600.0;
  if (!arguments.token_file.empty()) config.token = read_token(arguments.token_file);
  if (config.token.empty() && !server::is_loopback(config.host)) {
    if (!config.insecure) {
      fail(
          "--host {} without --token-file: anyone who can reach this address could use the "
          "server; give it a token (--token-file), or pass --insecure to serve without one",
          config.host);
    }
    spdlog::warn(
        "SERVING WITHOUT A TOKEN ON {}: anyone who can reach this address can submit, "
        "read and delete jobs (--insecure)",
        config.host);
  }
  // Resolved once, against the folder the server starts in, so the log and the checks name the
  // same folder whatever happens later.
  if (!config.allow_paths.empty()) {
    std::error_code error;
    const auto absolute = std::filesystem::canonical(config.allow_paths, error);
    if (error) fail("--allow-paths {}: {}", config.allow_paths.string(), error.message());
    config.allow_paths = absolute;
  }
  // The engine's settings as option values, once: the server's fixed settings, the engine's
  // configuration and its layout are all read from them.
  const nlohmann::json values =
      with_layout_values(table_values(arguments.engine, arguments.flags), arguments.devices,
                         arguments.engines, arguments.jobs);
  config.engine_values = values;
  config.validate();

  // SIGTERM and SIGINT are taken by one thread (below), never by the engine's or the server's.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // A file-size limit (ulimit -f) makes a write fail, which is answered; it must not kill the
  // server with every job in it.
  signal(SIGXFSZ, SIG_IGN);

  const pipeline::DiarizationModels paths = resolve_models(arguments.engine, arguments.flags);
  const bool speed_twin = models::warn_if_speed_twin(paths.embedding);
  pipeline::DiarizationConfig diarization = diarization_config(arguments.engine, arguments.flags);
  const ModelProviders providers = model_providers(paths, diarization);

  server::JobStore store(config.state_dir);
  const std::size_t requeued = store.requeue_running();
  const corpus::EngineLayout layout =
      corpus::plan_engine_layout(paths, diarization, corpus::layout_request(values));
  const auto engine_owner = corpus::make_corpus_engine(paths, layout);
  corpus::CorpusEngine& engine = *engine_owner;
  server::Metrics metrics;
  server::JobPolicy policy;
  policy.allow_paths = config.allow_paths;
  policy.retain_seconds = arguments.retain_days * 86400.0;
  policy.remove_uploads = !arguments.keep_uploads;
  if (!arguments.voiceprints.empty()) {
    policy.identify =
        library_identifier(arguments.voiceprints, arguments.identify_threshold, paths.embedding);
  }
  policy.embedding_model_digest = identity::embedding_model_digest(paths.embedding);
  policy.engine_values = values;
  server::JobQueue queue(store, engine, metrics, policy);
  server::EngineInfo info;
  info.engines = engine.engine_count();
  info.providers = providers.describe();
  info.devices = layout.devices;
  if (const auto watched = providers.watched_device()) info.accelerator = watched->provider;
  if (speed_twin) {
    info.warning =
        "the embedding model is a speed twin with random weights: speaker labels are "
        "meaningless (it is for timing; install the real model, see docs/models.md)";
  }
  info.voiceprints = arguments.voiceprints;
  info.embedding_model_digest = policy.embedding_model_digest;
  server::HttpApi api(config, info, store, queue, metrics);
  // The live streams' networks load with the first stream (a server that never streams does not
  // hold them twice), then serve every stream.
  std::mutex stream_models_mutex;
  std::unique_ptr<stream::StreamModels> stream_models;
  const auto shared_stream_models = [&]() -> const stream::StreamModels& {
    const std::lock_guard lock(stream_models_mutex);
    if (!stream_models) stream_models = std::make_unique<stream::StreamModels>(paths, diarization);
    return *stream_models;
  };
  api.enable_live_streams([&](const server::LiveStreamRequest& request) {
    return server::stream_diarizer_factory(shared_stream_models(), {})(request);
  });
  const int port = api.bind();

  std::thread signal_watcher([&] {
    int signal_number = 0;
    sigwait(&signals, &signal_number);
    spdlog::info("signal {}: no new requests; finishing the jobs in the networks", signal_number);
    api.stop();
  });
  queue.start();
  if (requeued > 0) spdlog::info("{} jobs the last run left running are queued again", requeued);
  spdlog::info("serving on http://{}:{}/ ({} engines on {}; {})", config.host, port,
               engine.engine_count(), providers.describe(), config.to_string());
  api.serve();
  // Ended by something other than a signal (it cannot be): let the watcher go.
  pthread_kill(signal_watcher.native_handle(), SIGTERM);
  signal_watcher.join();
  queue.stop();
  spdlog::info("stopped; unfinished jobs stay queued in {}", config.state_dir.string());
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto arguments = std::make_shared<ServeArguments>();
  auto* command = app.add_subcommand(
      "serve", "Run a diarization service: an HTTP API, a job queue kept on disk, a web page");
  auto& config = arguments->config;
  command->add_option("--host", config.host, "address to listen on (loopback by default)")
      ->capture_default_str();
  command->add_option("--port", config.port, "port to listen on (0: any free port, logged)")
      ->check(number_between(0, 65535))
      ->capture_default_str();
  command
      ->add_option("--state-dir", config.state_dir,
                   "folder for jobs, uploads and results (kept across restarts)")
      ->required();
  command->add_option("--max-queue", config.max_queue, "queued jobs before new ones get 429")
      ->check(number_at_least(1))
      ->capture_default_str();
  command->add_option("--max-upload-mb", arguments->max_upload_mb, "largest upload (MiB)")
      ->check(number_at_least(1))
      ->capture_default_str();
  command->add_option("--max-audio-hours", arguments->max_audio_hours, "longest recording")
      ->check(number_above(0))
      ->capture_default_str();
  command->add_option("--token-file", arguments->token_file,
                      "file whose first line is the bearer token every request but health needs");
  command->add_option("--allow-paths", config.allow_paths,
                      "folder whose files clients may name (form field 'path') instead of "
                      "uploading");
  command->add_option("--http-threads", config.http_threads, "uploads read at once")
      ->check(number_between(1, 256))
      ->capture_default_str();
  command
      ->add_option("--max-connections", config.max_connections,
                   "connections served at once (beyond: /v1/health only, 503 otherwise)")
      ->check(number_between(1, 4096))
      ->capture_default_str();
  command
      ->add_option("--max-client-connections", config.max_client_connections,
                   "connections served at once from one address (a reverse proxy is one)")
      ->check(number_at_least(1))
      ->capture_default_str();
  command
      ->add_option("--max-streams", config.max_streams,
                   "live streams (/v1/stream) open at once (beyond: 503); each holds a connection")
      ->check(number_between(0, 4096))
      ->capture_default_str();
  command->add_flag(
      "--no-final-recluster{false}", config.allow_final_recluster,
      "refuse live streams that ask final_recluster (its batch diarization at the stream's end "
      "holds the models every live stream shares, and the audio waits in a temporary file)");
  command
      ->add_option("--header-timeout", config.header_timeout_seconds,
                   "seconds a request's line and headers may take to arrive")
      ->check(number_above(0))
      ->capture_default_str();
  command
      ->add_option("--read-timeout", config.read_timeout_seconds,
                   "seconds a request body may pause, or an answer wait to be taken")
      ->check(number_above(0))
      ->capture_default_str();
  command
      ->add_option("--retain", arguments->retain_days,
                   "days a finished job (its row, results and files) is kept; 0 keeps them all")
      ->check(number_at_least(0))
      ->capture_default_str();
  add_table_flag(*command, "voiceprints", arguments->voiceprints)
      ->description(
          "speaker library (`parley voiceprint add`): every job's result names the speakers that "
          "match it (read per job: voiceprints added meanwhile count); clients manage it at "
          "/v1/voiceprints")
      ->check(CLI::ExistingFile);
  add_threshold_flag(*command, arguments->identify_threshold);
  command->add_flag("--keep-uploads", arguments->keep_uploads,
                    "keep an uploaded recording once its job is done (removed by default; the "
                    "results stay)");
  command->add_flag("--insecure", config.insecure,
                    "allow --host beyond loopback without --token-file");
  add_engine_layout_flags(*command, arguments->devices, arguments->engines, arguments->jobs);
  add_clustering_flags(*command, arguments->flags);
  add_engine_flags(*command, arguments->engine);
  command->callback([arguments] { run_serve(*arguments); });
}

}  // namespace parley::cli
