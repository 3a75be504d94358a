#pragma once
// The HTTP/JSON API under /v1 (described by docs/openapi.json, served at /v1/openapi.json), the
// Prometheus metrics at /metrics and the web page at /. Every error is a JSON body
// {"error": {"code", "message"}}. With a token, every endpoint but /v1/health and the page
// itself wants "Authorization: Bearer <token>" (the page asks for the token).
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "identity/speaker_library.h"
#include "runtime/provider.h"
#include "server/job_queue.h"
#include "server/job_store.h"
#include "server/live_session.h"
#include "server/metrics.h"
#include "server/server_config.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace httplib {
class ContentReader;
}

namespace parley::server {

// A request answered with an error: thrown by the handlers, written as the JSON error body.
struct HttpError {
  int status;
  std::string code;
  std::string message;
  int retry_after_seconds = 0;
};

// docs/openapi.json with the job form's option fields and the result formats written from the
// option table (pipeline/option_table.h): what /v1/openapi.json serves.
std::string openapi_with_options();

// A transcript sent with a recording may add this much to the form.
inline constexpr std::size_t kMaxTranscriptBytes = std::size_t{16} << 20;

// What /v1/health and /metrics say about the engine.
struct EngineInfo {
  std::size_t engines = 1;
  std::string providers;  // "cpu", "cuda", ...
  std::vector<int> devices;
  std::optional<runtime::ProviderId> accelerator;  // whose device memory /metrics reports
  // Said in health, in every job and on the page: results the server gives may mislead.
  std::string warning;
  // The speaker library the /v1/voiceprints endpoints manage (and jobs are named from); empty:
  // none, and those endpoints answer 404. Voiceprints are of the embedding model whose sha256 is
  // embedding_model_digest: another model's are refused.
  std::filesystem::path voiceprints;
  std::string embedding_model_digest;
};

// What a POST with a recording asks for.
enum class Submission {
  kJob,         // POST /v1/jobs: queued, answered at once
  kDiarize,     // POST /v1/diarize: answered with the result
  kVoiceprint,  // POST /v1/voiceprints (a form): the one speaker's voiceprint, into the library
};

class HttpApi {
 public:
  // With a server of its own, for bind(), serve() and stop().
  HttpApi(ServerConfig config, EngineInfo engine, JobStore& store, JobRunner& runner,
          Metrics& metrics);
  // The routes on `server`, which the caller owns and drives (the HTTP fuzzer hands it requests
  // without a socket); it must outlive this.
  HttpApi(ServerConfig config, EngineInfo engine, JobStore& store, JobRunner& runner,
          Metrics& metrics, httplib::Server& server);
  ~HttpApi();
  HttpApi(const HttpApi&) = delete;
  HttpApi& operator=(const HttpApi&) = delete;

  // Binds config.host:config.port and returns the port (the chosen one for port 0).
  int bind();
  // Serves until stop(); returns after the connections in progress are answered.
  void serve();
  // From any thread (a signal watcher): stop accepting; open live streams get a close frame.
  void stop();

  // Live streams at GET /v1/stream (docs/serve.md) are made by `factory`; without one that
  // endpoint answers 501. Call before serve().
  void enable_live_streams(LiveStreamFactory factory);

 private:
  HttpApi(ServerConfig config, EngineInfo engine, JobStore& store, JobRunner& runner,
          Metrics& metrics, std::unique_ptr<httplib::Server> server);
  void add_routes();
  void add_voiceprint_routes();
  // What is wrong with a request's line and headers (its framing, its size, the connection's
  // limits), before its body is read.
  std::optional<HttpError> check_head(const httplib::Request& request) const;
  std::optional<HttpError> check_token(const httplib::Request& request) const;
  void open_live_stream(const httplib::Request& request, httplib::Response& response);
  std::size_t form_limit() const;
  void accept_job(const httplib::Request& request, const httplib::ContentReader& reader,
                  httplib::Response& response, Submission submission);
  // The speaker library, opened for one request (each holds its own connection: SQLite's WAL
  // and busy timeout order them with the queue's and other processes'); 404 without one.
  std::unique_ptr<identity::SpeakerLibrary> open_library() const;
  // A JSON request body of at most `limit` bytes, read within its limits.
  std::string read_json_body(const httplib::Request& request, const httplib::ContentReader& reader,
                             httplib::Response& response, std::size_t limit);
  // After a Submission::kVoiceprint job: its one speaker into the library as `name`, the job
  // removed. `start`: where the range it ran on starts (none: the whole recording).
  void finish_voiceprint(const Job& job, const std::optional<Job>& finished,
                         const std::string& name, std::optional<double> start,
                         httplib::Response& response);
  void add_voiceprint_from_job(const std::string& body, httplib::Response& response);
  void rename_voiceprints(const std::string& name, const std::string& body,
                          httplib::Response& response);
  void remove_voiceprints(const std::string& name, httplib::Response& response);
  void import_voiceprints(const std::string& body, httplib::Response& response);
  void answer_job(const std::string& id, httplib::Response& response);
  void answer_result(const std::string& id, const std::string& format, httplib::Response& response);
  void delete_job(const std::string& id, httplib::Response& response);
  void list_jobs(const httplib::Request& request, httplib::Response& response);
  MetricsSnapshot snapshot() const;

  ServerConfig config_;
  EngineInfo engine_;
  JobStore& store_;
  JobRunner& queue_;
  Metrics& metrics_;
  std::mutex admission_;       // the queue-full check and the insert, as one step
  std::size_t admitting_ = 0;  // requests past the check whose jobs are not yet in the store
  LiveStreamFactory live_streams_;
  std::unique_ptr<httplib::Server> own_server_;  // unset when the caller owns the server
  httplib::Server& server_;
};

}  // namespace parley::server
