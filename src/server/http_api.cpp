#include "server/http_api.h"

#include <httplib.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <span>
#include <sstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "audio/audio_range.h"
#include "audio/audio_source.h"
#include "cluster/speaker_count_constraints.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/sample_rate.h"
#include "core/version.h"
#include "eval/rttm.h"
#include "identity/speaker_library.h"
#include "identity/voiceprint.h"
#include "pipeline/option_table.h"
#include "pipeline/option_values.h"
#include "pipeline/result_writer.h"
#include "runtime/device_memory.h"
#include "server/allowed_file.h"
#include "server/embedded_files.h"
#include "server/guarded_server.h"
#include "server/messages.h"
#include "server/result_documents.h"
#include "server/websocket.h"
#include "stream/stream_options.h"
#include "transcript/transcript.h"

namespace parley::server {
namespace fs = std::filesystem;
namespace {

[[noreturn]] void refuse(int status, std::string code, std::string message) {
  throw HttpError{status, std::move(code), std::move(message)};
}

// Answers echo what clients sent (a field name, a file name), which need not be UTF-8: invalid
// bytes become U+FFFD instead of nlohmann::json throwing (a 500, found by fuzz_http).
std::string json_text(const nlohmann::json& body) {
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

// A client's text as valid UTF-8 (invalid bytes as U+FFFD), before it is kept: the store, the
// results and the answers are JSON.
std::string valid_utf8(const std::string& text) {
  return nlohmann::json::parse(json_text(text)).get<std::string>();
}

// An option value in a message: text as it is, numbers as fmt writes them (1 s, not 1.0).
std::string shown_value(const nlohmann::json& value) {
  if (value.is_string()) return valid_utf8(value.get<std::string>());
  if (value.is_number_float()) return fmt::format("{}", value.get<double>());
  return value.dump();
}

void write_error(httplib::Response& response, const HttpError& error) {
  response.status = error.status;
  if (error.retry_after_seconds > 0) {
    response.set_header("Retry-After", std::to_string(error.retry_after_seconds));
  }
  const nlohmann::json body = {{"error", {{"code", error.code}, {"message", error.message}}}};
  response.set_content(json_text(body), "application/json");
}

void write_json(httplib::Response& response, int status, const nlohmann::json& body) {
  response.status = status;
  response.set_content(json_text(body), "application/json");
}

// The short code of a status httplib answers by itself (unknown route, oversized body).
std::string status_code_name(int status) {
  switch (status) {
    case 400:
      return "bad_request";
    case 401:
      return "unauthorized";
    case 404:
      return "not_found";
    case 405:
      return "method_not_allowed";
    case 413:
      return "too_large";
    case 414:
      return "uri_too_long";
    case 415:
      return "unsupported_media_type";
    default:
      return status >= 500 ? "internal" : "error";
  }
}

// What to do about a status httplib answers by itself.
std::string status_text(int status) {
  switch (status) {
    case 404:
      return "no such endpoint (see /v1/openapi.json)";
    case 405:
      return "this endpoint does not take that method (see /v1/openapi.json)";
    case 413:
      return "the request is larger than this server takes";
    case 414:
      return "the request line is too long";
    case 400:
      return "the request could not be read (headers too long, or not HTTP/1.1?)";
    default:
      return fmt::format("HTTP status {}", status);
  }
}

bool is_job_id(const std::string& id) {
  return id.size() == 32 && std::all_of(id.begin(), id.end(), [](char c) {
           return std::isdigit(static_cast<unsigned char>(c)) || (c >= 'a' && c <= 'f');
         });
}

// Same-length comparison that takes as long for a near miss as for a far one.
bool same_token(const std::string& given, const std::string& expected) {
  if (given.size() != expected.size()) return false;
  unsigned char difference = 0;
  for (std::size_t i = 0; i < given.size(); ++i) {
    difference |= static_cast<unsigned char>(given[i] ^ expected[i]);
  }
  return difference == 0;
}

// A client's file extension, kept only when it is plain letters and digits (decoders and the
// transcript detector look at it).
std::string safe_extension(const std::string& filename) {
  std::string extension = fs::path(filename).extension().string();
  if (extension.size() < 2 || extension.size() > 9) return "";
  for (std::size_t i = 1; i < extension.size(); ++i) {
    const char c = extension[i];
    if (!std::isalnum(static_cast<unsigned char>(c))) return "";
    extension[i] = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return extension;
}

std::size_t parse_index(const httplib::Request& request, const char* name, std::size_t fallback,
                        std::size_t maximum) {
  if (!request.has_param(name)) return fallback;
  const std::string value = request.get_param_value(name);
  std::size_t number = 0;
  const auto [end, status] = std::from_chars(value.data(), value.data() + value.size(), number);
  if (status != std::errc() || end != value.data() + value.size() || number > maximum) {
    refuse(422, "invalid_parameter",
           fmt::format("{}: expected a whole number in [0, {}] (got '{}')", name, maximum, value));
  }
  return number;
}

std::size_t queued_jobs(const JobStore& store) {
  return store.count_by_state().at(JobState::kQueued);
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// The answer is the last thing on this connection: what the client still sends of its body is not
// read (as a request, it would be garbage).
void close_connection(httplib::Response& response) {
  response.set_header("Connection", "close");
  GuardedServer::close_after_answer();
}

// `handler` with its refusals written as JSON errors.
template <typename Handler>
auto guarded(Handler handler) {
  return [handler](const httplib::Request& request, httplib::Response& response) {
    try {
      handler(request, response);
    } catch (const HttpError& error) {
      write_error(response, error);
    }
  };
}

// A JSON request (a voiceprint from a job, a rename) and a library export to import.
constexpr std::size_t kMaxJsonBytes = 64 * 1024;
constexpr std::size_t kMaxLibraryJsonBytes = std::size_t{64} << 20;

// The largest body a route takes (`form_limit`: a form with a recording); none: it takes none.
std::optional<std::size_t> body_limit(const httplib::Request& request, std::size_t form_limit) {
  if (request.method == "POST" && (request.path == "/v1/jobs" || request.path == "/v1/diarize" ||
                                   request.path == "/v1/voiceprints")) {
    return form_limit;
  }
  if (request.method == "POST" && request.path == "/v1/voiceprints/import") {
    return kMaxLibraryJsonBytes;
  }
  if (request.method == "PATCH" && request.path.starts_with("/v1/voiceprints/")) {
    return kMaxJsonBytes;
  }
  return std::nullopt;
}

bool is_json(const httplib::Request& request) {
  const std::string type = request.get_header_value("Content-Type");
  const std::string_view media = std::string_view(type).substr(0, type.find(';'));
  return iequals(media, "application/json");
}

[[noreturn]] void refuse_no_library() {
  refuse(404, "no_library",
         "this server keeps no speaker library (its operator starts it with parley serve "
         "--voiceprints LIB)");
}

// The request's JSON object, or 400 saying why not.
nlohmann::json parse_object(const std::string& body) {
  nlohmann::json parsed;
  try {
    parsed = nlohmann::json::parse(body);
  } catch (const nlohmann::json::exception& error) {
    refuse(400, "invalid_json", fmt::format("the body is not JSON: {}", error.what()));
  }
  if (!parsed.is_object()) refuse(400, "invalid_json", "the body must be a JSON object");
  return parsed;
}

std::optional<std::string> string_member(const nlohmann::json& object, const char* name) {
  const auto found = object.find(name);
  if (found == object.end() || found->is_null()) return std::nullopt;
  if (!found->is_string()) {
    refuse(422, "invalid_field", fmt::format("'{}' must be a string", name));
  }
  return found->get<std::string>();
}

std::string required_string(const nlohmann::json& object, const char* name, const char* what) {
  auto value = string_member(object, name);
  if (!value) refuse(422, "missing_field", fmt::format("send '{}': {}", name, what));
  return *value;
}

// A speaker name the library takes (identity::check_speaker_name), or 422 saying why not.
void check_name(const std::string& name) {
  try {
    identity::check_speaker_name(name);
  } catch (const Error& error) {
    refuse(422, "invalid_name", error.what());
  }
}

// The comma-separated items of a header's values (Connection, Sec-WebSocket-Protocol), trimmed.
std::vector<std::string> header_items(const httplib::Request& request, const std::string& name) {
  std::vector<std::string> items;
  const std::size_t count = request.get_header_value_count(name);
  for (std::size_t k = 0; k < count; ++k) {
    std::stringstream values(request.get_header_value(name, k));
    std::string item;
    while (std::getline(values, item, ',')) {
      const std::size_t begin = item.find_first_not_of(" \t");
      const std::size_t end = item.find_last_not_of(" \t");
      if (begin != std::string::npos) items.push_back(item.substr(begin, end - begin + 1));
    }
  }
  return items;
}

// A browser's WebSocket cannot send headers: the token may come as a subprotocol instead.
constexpr std::string_view kTokenProtocol = "bearer.";
constexpr std::string_view kStreamProtocol = "parley";

bool has_body(const httplib::Request& request) {
  if (request.has_header("Transfer-Encoding")) return true;
  const std::string length = request.get_header_value("Content-Length");
  return !length.empty() && length.find_first_not_of('0') != std::string::npos;
}

[[noreturn]] void refuse_storage(const std::exception& error, const char* what) {
  spdlog::error("{}: {}", what, error.what());
  if (is_out_of_space(error.what())) {
    refuse(507, "insufficient_storage",
           "the server is out of disk space for this; try again later, or tell its operator");
  }
  refuse(500, "internal", fmt::format("{} failed on the server (its log says why)", what));
}

ConnectionLimits connection_limits(const ServerConfig& config) {
  ConnectionLimits limits;
  limits.max_connections = static_cast<std::size_t>(config.max_connections);
  limits.max_client_connections = static_cast<std::size_t>(config.max_client_connections);
  limits.body_slots = static_cast<std::size_t>(config.http_threads);
  limits.header_seconds = config.header_timeout_seconds;
  limits.read_seconds = config.read_timeout_seconds;
  return limits;
}

}  // namespace

HttpApi::HttpApi(ServerConfig config, EngineInfo engine, JobStore& store, JobRunner& runner,
                 Metrics& metrics)
    : HttpApi(config, std::move(engine), store, runner, metrics,
              std::make_unique<GuardedServer>(connection_limits(config))) {}

HttpApi::HttpApi(ServerConfig config, EngineInfo engine, JobStore& store, JobRunner& runner,
                 Metrics& metrics, httplib::Server& server)
    : config_(std::move(config)),
      engine_(std::move(engine)),
      store_(store),
      queue_(runner),
      metrics_(metrics),
      server_(server) {
  config_.validate();
  add_routes();
}

HttpApi::HttpApi(ServerConfig config, EngineInfo engine, JobStore& store, JobRunner& runner,
                 Metrics& metrics, std::unique_ptr<httplib::Server> server)
    : HttpApi(std::move(config), std::move(engine), store, runner, metrics, *server) {
  own_server_ = std::move(server);
}

HttpApi::~HttpApi() = default;

int HttpApi::bind() {
  const int port = config_.port == 0
                       ? server_.bind_to_any_port(config_.host)
                       : (server_.bind_to_port(config_.host, config_.port) ? config_.port : -1);
  if (port < 0) {
    fail("cannot listen on {}:{} (in use, or not an address of this machine?)", config_.host,
         config_.port);
  }
  return port;
}

void HttpApi::serve() { server_.listen_after_bind(); }

void HttpApi::stop() { server_.stop(); }

void HttpApi::enable_live_streams(LiveStreamFactory factory) { live_streams_ = std::move(factory); }

std::optional<HttpError> HttpApi::check_head(const httplib::Request& request) const {
  if (GuardedServer::limited() && request.path != "/v1/health") {
    HttpError error{503, "too_many_connections",
                    "this server has as many connections as it serves (from your address, or in "
                    "all); try again when one of yours has finished"};
    error.retry_after_seconds = 5;
    return error;
  }
  // The framing, before any of the body is read: a length that is not a plain number (negative,
  // 1e20, past 2^64), two lengths, a coding other than chunked, or a body where none belongs is
  // refused at once instead of being waited for.
  const bool chunked = request.has_header("Transfer-Encoding");
  if (request.get_header_value_count("Content-Length") > 1 ||
      request.get_header_value_count("Transfer-Encoding") > 1) {
    return HttpError{400, "bad_request", "send one Content-Length or one Transfer-Encoding"};
  }
  if (chunked && !iequals(request.get_header_value("Transfer-Encoding"), "chunked")) {
    return HttpError{501, "not_implemented", "the only Transfer-Encoding taken is chunked"};
  }
  if (chunked && request.has_header("Content-Length")) {
    return HttpError{400, "bad_request",
                     "send Content-Length or Transfer-Encoding: chunked, not both"};
  }
  std::uint64_t length = 0;
  if (request.has_header("Content-Length")) {
    const std::string value = request.get_header_value("Content-Length");
    const auto [end, status] = std::from_chars(value.data(), value.data() + value.size(), length);
    if (value.empty() || status != std::errc() || end != value.data() + value.size()) {
      return HttpError{400, "bad_request",
                       fmt::format("Content-Length must be a whole number of bytes below 2^64 "
                                   "(got '{}')",
                                   value.substr(0, 40))};
    }
  }
  const std::optional<std::size_t> limit = body_limit(request, form_limit());
  if (!limit) {
    if (has_body(request)) {
      return HttpError{413, "too_large", "this endpoint takes no request body"};
    }
    return std::nullopt;
  }
  if (!chunked && !request.has_header("Content-Length")) {
    return HttpError{411, "length_required",
                     "send the body with a Content-Length or Transfer-Encoding: chunked"};
  }
  if (*limit != form_limit() && length > *limit) {
    return HttpError{413, "too_large",
                     fmt::format("the request is {} KiB; this endpoint takes at most {} KiB",
                                 length >> 10, *limit >> 10)};
  }
  if (length > form_limit()) {
    return HttpError{413, "too_large",
                     fmt::format("the request is {} MiB; this server takes forms of at most {} "
                                 "MiB (the recording at most {} MiB)",
                                 length >> 20, form_limit() >> 20, config_.max_upload_bytes >> 20)};
  }
  return std::nullopt;
}

std::optional<HttpError> HttpApi::check_token(const httplib::Request& request) const {
  if (config_.token.empty() || request.path == "/v1/health" || request.path == "/") {
    return std::nullopt;
  }
  // The scheme is case-insensitive (RFC 7235), the token is not.
  const std::string header = request.get_header_value("Authorization");
  const std::string scheme = "bearer ";
  if (header.size() > scheme.size() && iequals(header.substr(0, scheme.size()), scheme) &&
      same_token(header.substr(scheme.size()), config_.token)) {
    return std::nullopt;
  }
  if (request.path == "/v1/stream") {
    if (request.has_param("token") && same_token(request.get_param_value("token"), config_.token)) {
      return std::nullopt;
    }
    for (const std::string& protocol : header_items(request, "Sec-WebSocket-Protocol")) {
      if (protocol.rfind(kTokenProtocol, 0) == 0 &&
          same_token(protocol.substr(kTokenProtocol.size()), config_.token)) {
        return std::nullopt;
      }
    }
    return HttpError{401, "unauthorized",
                     "send the server's token as 'Authorization: Bearer <token>', as the query "
                     "parameter 'token', or as the WebSocket subprotocol 'bearer.<token>'"};
  }
  return HttpError{401, "unauthorized",
                   "send the server's token as 'Authorization: Bearer <token>'"};
}

std::size_t HttpApi::form_limit() const {
  // The recording, a transcript, and the other fields with the form's own framing.
  return config_.max_upload_bytes + kMaxTranscriptBytes + (std::size_t{256} << 10);
}

void HttpApi::add_routes() {
  httplib::Server& server = server_;
  server.set_payload_max_length(form_limit());

  const auto refused_head = [this](const httplib::Request& request, httplib::Response& response) {
    std::optional<HttpError> error = check_head(request);
    if (!error) error = check_token(request);
    if (!error && has_body(request) && !GuardedServer::take_body_slot()) {
      error = HttpError{503, "busy",
                        "the server is reading as many uploads as it takes at once; try again"};
      error->retry_after_seconds = 5;
    }
    if (!error) return false;
    if (error->status == 401) response.set_header("WWW-Authenticate", "Bearer");
    if (has_body(request) || error->status >= 500 || error->status == 400) {
      close_connection(response);
    }
    write_error(response, *error);
    return true;
  };
  server.set_pre_routing_handler(
      [refused_head](const httplib::Request& request, httplib::Response& response) {
        if (refused_head(request, response)) return httplib::Server::HandlerResponse::Handled;
        GuardedServer::reading_body();
        return httplib::Server::HandlerResponse::Unhandled;
      });
  // "Expect: 100-continue": a client that waits for it is told before it sends the body.
  server.set_expect_100_continue_handler(
      [refused_head](const httplib::Request& request, httplib::Response& response) {
        return refused_head(request, response) ? response.status : 100;
      });
  server.set_error_handler(httplib::Server::HandlerWithResponse(
      [](const httplib::Request&, httplib::Response& response) {
        if (!response.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        write_error(response, HttpError{response.status, status_code_name(response.status),
                                        status_text(response.status)});
        return httplib::Server::HandlerResponse::Handled;
      }));
  // The message stays in the log: it may name the server's files.
  server.set_exception_handler([](const httplib::Request& request, httplib::Response& response,
                                  std::exception_ptr exception) {
    std::string message = "unknown error";
    try {
      std::rethrow_exception(exception);
    } catch (const std::exception& error) {
      message = error.what();
    } catch (...) {
    }
    spdlog::error("{} {} failed: {}", request.method, request.path, message);
    write_error(response,
                {500, "internal", "the server failed to answer this request (its log says why)"});
  });
  server.set_logger([this](const httplib::Request& request, const httplib::Response& response) {
    metrics_.count_request(response.status);
    spdlog::info("{} {} {} {} {}", request.remote_addr, request.method, request.path,
                 response.status, response.body.size());
  });

  const auto job_id = [](const httplib::Request& request) {
    const std::string id = request.matches[1];
    if (!is_job_id(id)) refuse(404, "not_found", "no such job (ids are 32 hex digits)");
    return id;
  };

  server.Get("/", [](const httplib::Request&, httplib::Response& response) {
    response.set_content(std::string(web_page()), "text/html; charset=utf-8");
  });
  server.Get("/v1/openapi.json", [](const httplib::Request&, httplib::Response& response) {
    static const std::string document = openapi_with_options();
    response.set_content(document, "application/json");
  });
  server.Get("/v1/health", [this](const httplib::Request&, httplib::Response& response) {
    nlohmann::json health = {{"status", "ok"},
                             {"version", kVersion},
                             {"models_loaded", true},
                             {"engines", engine_.engines},
                             {"providers", engine_.providers},
                             {"devices", engine_.devices},
                             {"queue_depth", queued_jobs(store_)},
                             {"settings", config_.fixed_settings()}};
    if (!engine_.warning.empty()) health["warning"] = engine_.warning;
    write_json(response, 200, health);
  });
  server.Get("/v1/stream",
             guarded([this](const httplib::Request& request, httplib::Response& response) {
               open_live_stream(request, response);
             }));
  server.Get("/metrics", [this](const httplib::Request&, httplib::Response& response) {
    response.set_content(metrics_.render(snapshot()), "text/plain; version=0.0.4; charset=utf-8");
  });
  // The form is read here, part by part, within its limits (a chunked or compressed body has no
  // length to check first).
  for (const auto& [route, submission] :
       {std::pair{"/v1/jobs", Submission::kJob}, std::pair{"/v1/diarize", Submission::kDiarize}}) {
    server.Post(route, [this, submission = submission](const httplib::Request& request,
                                                       httplib::Response& response,
                                                       const httplib::ContentReader& reader) {
      try {
        accept_job(request, reader, response, submission);
      } catch (const HttpError& error) {
        write_error(response, error);
      }
    });
  }
  add_voiceprint_routes();
  server.Get("/v1/jobs",
             guarded([this](const httplib::Request& request, httplib::Response& response) {
               list_jobs(request, response);
             }));
  server.Get(R"(/v1/jobs/([^/]+))",
             guarded([this, job_id](const httplib::Request& request, httplib::Response& response) {
               answer_job(job_id(request), response);
             }));
  server.Get(R"(/v1/jobs/([^/]+)/result)",
             guarded([this, job_id](const httplib::Request& request, httplib::Response& response) {
               answer_result(job_id(request),
                             request.has_param("format")
                                 ? request.get_param_value("format")
                                 : std::string(pipeline::kDefaultResultFormat),
                             response);
             }));
  server.Delete(R"(/v1/jobs/([^/]+))", guarded([this, job_id](const httplib::Request& request,
                                                              httplib::Response& response) {
                  delete_job(job_id(request), response);
                }));
}

namespace {

// The stream option (stream/stream_options.h) a query parameter of /v1/stream names, by its
// name or an alias ("rate"); null for any other parameter.
const pipeline::OptionSpec* stream_parameter(const std::string& name) {
  for (const pipeline::OptionSpec& spec : stream::stream_options()) {
    if (!spec.faces.server) continue;
    if (spec.name == name || stream::query_parameter_name(spec) == name) return &spec;
  }
  return nullptr;
}

// `text` as the value of the stream option `spec` that the client named `name`, or a refusal
// with the table's message under that name.
nlohmann::json stream_parameter_value(const pipeline::OptionSpec& spec, const std::string& name,
                                      const std::string& text) {
  if (const std::string problem = spec.check(text); !problem.empty()) {
    refuse(400, "bad_request", fmt::format("{}: {}", valid_utf8(name), problem));
  }
  return spec.parse(text);
}

// Frees a live stream's place once its session (or the refused upgrade) is over.
struct StreamSlot {
  Metrics& metrics;
  explicit StreamSlot(Metrics& owner) : metrics(owner) {}
  StreamSlot(const StreamSlot&) = delete;
  StreamSlot& operator=(const StreamSlot&) = delete;
  ~StreamSlot() { metrics.close_stream(); }
};

}  // namespace

void HttpApi::open_live_stream(const httplib::Request& request, httplib::Response& response) {
  const bool upgrade = iequals(request.get_header_value("Upgrade"), "websocket");
  const auto connection = header_items(request, "Connection");
  if (!upgrade || std::none_of(connection.begin(), connection.end(),
                               [](const std::string& item) { return iequals(item, "upgrade"); })) {
    response.set_header("Upgrade", "websocket");
    refuse(426, "upgrade_required",
           "/v1/stream is a WebSocket: send 'Upgrade: websocket' and 'Connection: Upgrade' "
           "(docs/serve.md)");
  }
  if (request.get_header_value("Sec-WebSocket-Version") != "13") {
    response.set_header("Sec-WebSocket-Version", "13");
    refuse(426, "upgrade_required", "this server speaks WebSocket version 13 (RFC 6455)");
  }
  const std::string key = request.get_header_value("Sec-WebSocket-Key");
  if (!websocket::is_valid_client_key(key)) {
    refuse(400, "bad_request", "Sec-WebSocket-Key must be base64 of 16 bytes");
  }
  if (!live_streams_) {
    refuse(501, "not_implemented", "this server has no stream diarizer for live streams");
  }
  LiveStreamRequest stream_request;
  for (const auto& [name, value] : request.params) {
    if (name == "token") continue;
    const pipeline::OptionSpec* setting = stream_parameter(name);
    if (name == "format") {
      if (value == "s16le") {
        stream_request.format = PcmFormat::kS16le;
      } else if (value == "f32le") {
        stream_request.format = PcmFormat::kF32le;
      } else {
        refuse(400, "bad_request",
               fmt::format("format must be s16le or f32le (got '{}')", value.substr(0, 40)));
      }
    } else if (setting != nullptr) {
      // Any value but false is refused where final_recluster is: true, or a value it refuses.
      if (setting->name == "final_recluster" && !config_.allow_final_recluster &&
          value != "false" && value != "0") {
        refuse(400, "bad_request",
               "this server does not take final_recluster (its operator turned it off: it holds "
               "the models for the whole batch diarization at the stream's end, and the audio in "
               "a temporary file meanwhile); leave it out");
      }
      // The audio's shape, which the transport reads too; the rest is the stream's.
      if (setting->name == "sample_rate" || setting->name == "channels") {
        const nlohmann::json parsed = stream_parameter_value(*setting, name, value);
        if (setting->name == "channels") {
          stream_request.channels = parsed.get<int>();
        } else {
          stream_request.sample_rate = parsed.get<double>();
        }
      } else {
        stream_request.settings[name] = value;
      }
    } else {
      std::vector<std::string> names;
      for (const pipeline::OptionSpec& spec : stream::stream_options()) {
        if (spec.faces.server) names.emplace_back(stream::query_parameter_name(spec));
      }
      refuse(400, "bad_request",
             fmt::format("unknown parameter '{}' ({}, format, token)",
                         valid_utf8(name.substr(0, 40)), fmt::join(names, ", ")));
    }
  }
  if (!metrics_.open_stream(static_cast<std::size_t>(config_.max_streams))) {
    HttpError error{503, "busy",
                    fmt::format("this server has {} live streams open, as many as it takes; try "
                                "again when one has finished",
                                config_.max_streams)};
    error.retry_after_seconds = 5;
    throw error;
  }
  auto slot = std::make_shared<StreamSlot>(metrics_);
  std::shared_ptr<LiveStream> stream;
  try {
    stream = live_streams_(stream_request);
  } catch (const Error& error) {
    refuse(400, "bad_request", error.what());
  }
  std::string handshake = fmt::format(
      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      "Sec-WebSocket-Accept: {}\r\n",
      websocket::accept_key(key));
  const auto protocols = header_items(request, "Sec-WebSocket-Protocol");
  if (std::find(protocols.begin(), protocols.end(), kStreamProtocol) != protocols.end()) {
    handshake += fmt::format("Sec-WebSocket-Protocol: {}\r\n", kStreamProtocol);
  }
  handshake += "\r\n";
  LiveSessionLimits limits;
  limits.read_seconds = config_.read_timeout_seconds;
  response.status = 101;
  GuardedServer::upgrade(std::move(handshake), [this, slot, stream, stream_request, limits](
                                                   socket_t sock, std::string buffered,
                                                   const std::function<bool()>& stopping) {
    run_live_session(sock, std::move(buffered), *stream, stream_request, limits, stopping,
                     metrics_);
  });
}

namespace {

// `engine_progress`: where the engine holds the job. A queued job it holds is being decoded
// (or waits, decoded, for an engine); it is running once the networks start on it.
nlohmann::json job_json(const Job& job, std::optional<double> engine_progress,
                        const std::string& warning) {
  double progress = 0.0;
  if (job.state == JobState::kDone) progress = 1.0;
  if (job.state == JobState::kQueued || job.state == JobState::kRunning) {
    progress = engine_progress.value_or(0.0);
  }
  nlohmann::json body = {
      {"id", job.id},
      {"url", "/v1/jobs/" + job.id},
      {"state", to_string(job.state)},
      {"progress", progress},
      {"uri", job.uri},
      {"filename", job.options.value("filename", job.uri)},
      {"audio_seconds", job.audio_seconds},
      {"stage_seconds", job.stage_seconds},
      {"attempts", job.attempts},
      {"created", job.created},
      {"error", job.error.empty() ? nlohmann::json() : nlohmann::json(job.error)}};
  if (job.cancel_requested && job.state == JobState::kRunning) body["cancel_requested"] = true;
  if (!warning.empty()) body["warning"] = warning;
  if (job.started > 0.0) body["started"] = job.started;
  if (job.finished > 0.0) body["finished"] = job.finished;
  if (job.state == JobState::kDone) {
    body["result_url"] = "/v1/jobs/" + job.id + "/result";
    body["formats"] = result_formats();
  }
  return body;
}

}  // namespace

namespace {

// The form fields a job takes: the recording (audio or path), a transcript, and the option
// table's server options.
const std::vector<std::string>& form_fields() {
  static const std::vector<std::string> fields = [] {
    std::vector<std::string> names = {"audio", "path", "transcript"};
    for (const auto& option : pipeline::diarization_options()) {
      if (option.faces.server) names.push_back(option.name);
    }
    return names;
  }();
  return fields;
}

}  // namespace

namespace {

// An option's JSON schema in the OpenAPI document: type, choices, bounds, default.
nlohmann::ordered_json option_schema(const pipeline::OptionSpec& option) {
  nlohmann::ordered_json schema;
  switch (option.type) {
    case pipeline::OptionType::kNumber:
      schema["type"] = "number";
      break;
    case pipeline::OptionType::kInteger:
      schema["type"] = "integer";
      break;
    case pipeline::OptionType::kFlag:
      schema["type"] = "boolean";
      break;
    default:
      schema["type"] = "string";
  }
  if (!option.choices.empty()) schema["enum"] = option.choices;
  if (option.minimum) schema["minimum"] = *option.minimum;
  if (option.maximum) schema["maximum"] = *option.maximum;
  if (!option.default_value.is_null()) schema["default"] = option.default_value;
  return schema;
}

}  // namespace

std::string openapi_with_options() {
  auto document = nlohmann::ordered_json::parse(openapi_document());
  auto& properties = document["components"]["schemas"]["JobForm"]["properties"];
  for (const auto& option : pipeline::diarization_options()) {
    if (!option.faces.server) continue;
    nlohmann::ordered_json schema = option_schema(option);
    schema["description"] = option.help;
    properties[option.name] = std::move(schema);
  }
  // The WebSocket's query parameters: their schemas from the stream's table
  // (stream/stream_options.h); the document's own description where it has one (what the server
  // adds), else the table's help.
  auto& stream_parameters = document["paths"]["/v1/stream"]["get"]["parameters"];
  for (const auto& option : stream::stream_options()) {
    if (!option.faces.server) continue;
    const std::string name(stream::query_parameter_name(option));
    const auto listed = std::find_if(
        stream_parameters.begin(), stream_parameters.end(), [&](const auto& parameter) {
          return parameter.value("name", "") == name && parameter.value("in", "") == "query";
        });
    if (listed != stream_parameters.end()) {
      (*listed)["schema"] = option_schema(option);
    } else {
      stream_parameters.push_back({{"name", name},
                                   {"in", "query"},
                                   {"description", option.help},
                                   {"schema", option_schema(option)}});
    }
  }
  for (auto& parameter : document["paths"]["/v1/jobs/{id}/result"]["parameters"]) {
    if (parameter.value("name", "") == "format") {
      const auto names = pipeline::result_format_names();
      parameter["schema"]["enum"] = std::vector<std::string>(names.begin(), names.end());
    }
  }
  return document.dump(2) + "\n";
}

namespace {

// A form's parts by name, read within limits.
class Form {
 public:
  explicit Form(httplib::MultipartFormDataMap parts) : parts_(std::move(parts)) {}
  bool has(const std::string& name) const { return parts_.count(name) > 0; }
  const httplib::MultipartFormData& part(const std::string& name) const {
    return parts_.find(name)->second;
  }
  std::optional<std::string> value(const std::string& name) const {
    if (!has(name)) return std::nullopt;
    return part(name).content;
  }

 private:
  httplib::MultipartFormDataMap parts_;
};

constexpr std::size_t kMaxFormParts = 64;
constexpr std::size_t kMaxFieldBytes = 64 * 1024;

// The form a voiceprint is made from: the recording (audio or path), the name and a range.
const std::vector<std::string>& voiceprint_fields() {
  static const std::vector<std::string> fields = {"audio", "path", "name", "start", "end"};
  return fields;
}

std::optional<double> parse_seconds(const char* field, const std::optional<std::string>& value) {
  if (!value) return std::nullopt;
  double seconds = 0.0;
  const auto [end, status] = std::from_chars(value->data(), value->data() + value->size(), seconds);
  if (status != std::errc() || end != value->data() + value->size() || !std::isfinite(seconds) ||
      seconds < 0.0) {
    refuse(422, "invalid_parameter",
           fmt::format("{}: expected seconds into the recording, 0 or more (got '{}')", field,
                       valid_utf8(*value)));
  }
  return seconds;
}

// 16 kHz mono float32 samples as a WAV file's bytes (WAVE_FORMAT_IEEE_FLOAT): the range of a
// recording a voiceprint is made of, which the queue then reads as any recording.
std::string float_wav(std::span<const float> samples) {
  const auto data_bytes = static_cast<std::uint32_t>(samples.size() * sizeof(float));
  std::string bytes;
  const auto put = [&bytes](std::uint32_t value, int size) {
    for (int i = 0; i < size; ++i) bytes.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
  };
  bytes += "RIFF";
  put(36 + data_bytes, 4);
  bytes += "WAVEfmt ";
  put(16, 4);
  put(3, 2);  // IEEE float
  put(1, 2);  // mono
  put(kSampleRate, 4);
  put(kSampleRate * 4, 4);
  put(4, 2);
  put(32, 2);
  bytes += "data";
  put(data_bytes, 4);
  bytes.append(reinterpret_cast<const char*>(samples.data()), data_bytes);
  return bytes;
}

}  // namespace

void HttpApi::accept_job(const httplib::Request& request, const httplib::ContentReader& reader,
                         httplib::Response& response, Submission submission) {
  const bool wait = submission != Submission::kJob;
  const bool voiceprint = submission == Submission::kVoiceprint;
  if (voiceprint && engine_.voiceprints.empty()) {
    close_connection(response);
    refuse_no_library();
  }
  if (!request.is_multipart_form_data()) {
    close_connection(response);
    refuse(415, "unsupported_media_type",
           "send a multipart/form-data form with the recording in the field 'audio'");
  }
  // Each part within its own limit and the form within the sum, counted as the bytes come (after
  // any Content-Encoding is undone): a chunked or compressed body stops at the limit.
  const std::vector<std::string>& known = voiceprint ? voiceprint_fields() : form_fields();
  httplib::MultipartFormDataMap parts;
  auto current = parts.end();
  std::size_t total = 0;
  std::string too_large;
  std::string unknown;
  const bool read = reader(
      [&](const httplib::MultipartFormData& part) {
        // Refused before its content is read.
        if (std::find(known.begin(), known.end(), part.name) == known.end()) {
          unknown = part.name;
          return false;
        }
        if (parts.size() >= kMaxFormParts) {
          too_large = fmt::format("the form has more than {} parts", kMaxFormParts);
          return false;
        }
        current = parts.emplace(part.name, part);
        return true;
      },
      [&](const char* bytes, std::size_t size) {
        const std::string& name = current->first;
        const std::size_t limit = name == "audio"        ? config_.max_upload_bytes
                                  : name == "transcript" ? kMaxTranscriptBytes
                                                         : kMaxFieldBytes;
        std::string& content = current->second.content;
        total += size;
        if (content.size() + size > limit) {
          too_large = name == "audio"
                          ? fmt::format("the recording is larger than this server takes ({} MiB)",
                                        config_.max_upload_bytes >> 20)
                          : fmt::format(
                                "the form field '{}' is larger than this server takes ({} "
                                "KiB)",
                                valid_utf8(name), limit >> 10);
          return false;
        }
        if (total > form_limit()) {
          too_large =
              fmt::format("the form is larger than this server takes ({} MiB)", form_limit() >> 20);
          return false;
        }
        content.append(bytes, size);
        return true;
      });
  if (!read || (parts.empty() && too_large.empty())) {
    close_connection(response);
    if (!unknown.empty()) {
      refuse(422, "unknown_field",
             fmt::format("unknown form field '{}' (see /v1/openapi.json for the fields)",
                         valid_utf8(unknown)));
    }
    if (!too_large.empty()) refuse(413, "too_large", too_large);
    refuse(400, "bad_request",
           "the form could not be read: it is malformed, was cut short, or paused longer than "
           "the server waits");
  }
  GuardedServer::release_body_slot();
  const Form form(std::move(parts));

  const auto field = [&](const char* name) { return form.value(name); };
  // A form field as the option table types it (pipeline/option_table.h): the same grammar and
  // messages as every face; an empty field is refused, not taken for false.
  const auto option = [&](const char* name) -> std::optional<nlohmann::json> {
    const auto value = field(name);
    if (!value) return std::nullopt;
    try {
      return pipeline::diarization_option(name).parse(*value);
    } catch (const Error& error) {
      refuse(422, "invalid_option", valid_utf8(error.what()));
    }
  };

  // Every server option of the table: the settings the server fixed when it started must be
  // named with its values; the per_job ones are the job's (the format is how its result is
  // written); all of them reach the engine through job_configuration.
  Job job;
  std::string format = wait ? "json" : std::string(pipeline::kDefaultResultFormat);
  const nlohmann::json fixed = config_.fixed_settings();
  for (const pipeline::OptionSpec& spec : pipeline::diarization_options()) {
    if (!spec.faces.server) continue;
    const auto value = option(spec.name.c_str());
    if (!value) continue;
    if (!spec.per_job) {
      if (*value != fixed.at(spec.name)) {
        refuse(422, "setting_fixed",
               fmt::format("{}: the server runs with {} {} (a server's model settings are fixed "
                           "when it starts; got {})",
                           spec.name, spec.name, shown_value(fixed.at(spec.name)),
                           shown_value(*value)));
      }
    } else if (spec.name == "format") {
      format = value->get<std::string>();
    } else {
      job.options[spec.name] = *value;
    }
  }
  // Checked now as the job queue will apply them, so that a job it takes cannot fail on its
  // options.
  try {
    static_cast<void>(job_configuration(config_.engine_values, job.options));
  } catch (const Error& error) {
    refuse(422, "invalid_option", error.what());
  }
  // A voiceprint is the centroid of the recording (or its range) diarized as one speaker, as
  // identity::voiceprint_from_samples makes it; the queue's engine runs it as a job.
  std::string name;
  std::optional<double> start;
  std::optional<double> end;
  if (voiceprint) {
    name = field("name").value_or("");
    if (name.empty()) refuse(422, "missing_field", "send the speaker's name in the field 'name'");
    check_name(name);
    start = parse_seconds("start", field("start"));
    end = parse_seconds("end", field("end"));
    try {
      audio::check_time_range(start.value_or(0.0), end);
    } catch (const Error& error) {
      refuse(422, "invalid_parameter", error.what());
    }
    job.options["num_speakers"] = 1;
    job.options["voiceprint"] = name;
  }

  const bool has_audio = form.has("audio");
  const bool has_path = form.has("path");
  if (has_audio == has_path) {
    refuse(422, "missing_audio",
           "send the recording in the form field 'audio' (or, where the server allows it, a "
           "server file in 'path'), one of the two");
  }
  // A server file is opened once, here, and checked on the open descriptor (a link swapped in
  // after the check changes nothing); the queue checks it again when the job runs.
  std::optional<AllowedFile> server_file;
  std::string filename;
  if (has_path) {
    if (config_.allow_paths.empty()) {
      refuse(403, "forbidden",
             "this server takes no server-side paths (it was started without allow_paths); "
             "upload the recording in 'audio'");
    }
    const std::string named = form.part("path").content;
    if (named.empty() || named.find('\0') != std::string::npos || fs::path(named).is_absolute()) {
      refuse(403, "forbidden",
             "path: name a file inside the server's allowed folder, relative to it");
    }
    server_file.emplace(open_allowed_file(config_.allow_paths, named));
    if (server_file->check == AllowedFileCheck::kOutside) {
      refuse(403, "forbidden",
             "path: name a file inside the server's allowed folder, relative to it (links are "
             "followed, and must stay inside)");
    }
    if (server_file->check != AllowedFileCheck::kInside) {
      refuse(404, "not_found",
             fmt::format("path: no regular file '{}' in the allowed folder", valid_utf8(named)));
    }
    filename = valid_utf8(named);
  } else {
    filename = valid_utf8(form.part("audio").filename);
  }

  // Queue full: refused before anything is written. A request that passes holds its place in
  // the queue (admitting_) until its job is in the store or refused, so that requests checking
  // at the same time cannot all pass.
  {
    const std::lock_guard admission(admission_);
    const std::size_t queued = queued_jobs(store_) + admitting_;
    if (queued >= config_.max_queue) {
      HttpError error{429, "queue_full",
                      fmt::format("the queue is full ({} jobs waiting); try again later", queued)};
      error.retry_after_seconds = 10;
      throw error;
    }
    ++admitting_;
  }
  const auto admitted = std::shared_ptr<void>(nullptr, [this](void*) {
    const std::lock_guard admission(admission_);
    --admitting_;
  });

  std::string id;
  try {
    id = store_.new_job_folder();
  } catch (const Error& error) {
    refuse_storage(error, "creating the job's folder");
  }
  job.id = id;
  const fs::path folder = store_.job_folder(job.id);
  // As `parley diarize` names it; only ever written into results, never used as a path.
  job.uri = eval::recording_uri(filename);
  job.options["filename"] = fs::path(filename).filename().string();
  try {
    fs::path readable;
    if (has_audio) {
      job.audio = folder / ("audio" + safe_extension(filename));
      try {
        write_file_atomically(job.audio, form.part("audio").content);
      } catch (const Error& error) {
        refuse_storage(error, "storing the recording");
      }
      readable = job.audio;
    } else {
      job.audio = server_file->resolved;
      job.options["server_file"] = true;
      readable = server_file->file->path();
    }
    std::optional<double> duration;
    try {
      duration = audio::open_audio_source(readable)->info().duration_seconds();
    } catch (const Error& error) {
      const std::string client_name = job.options["filename"];
      refuse(415, "unsupported_audio",
             replace_all(replace_all(error.what(), readable.string(), client_name),
                         job.audio.string(), client_name));
    }
    if (duration.value_or(0.0) > config_.max_audio_seconds) {
      refuse(413, "too_long",
             fmt::format("the recording is {:.2f} h long; this server takes at most {:.2f} h",
                         *duration / 3600.0, config_.max_audio_seconds / 3600.0));
    }
    job.audio_seconds = duration.value_or(0.0);
    const bool range = start || end;
    if (range) {
      const double length = end ? *end - start.value_or(0.0) : 0.0;
      if (length > config_.max_sync_audio_seconds) {
        refuse(413, "too_long",
               fmt::format("a voiceprint is made of at most {:.0f} s of audio (this range is "
                           "{:.0f} s); a few tens of seconds of the speaker alone are plenty",
                           config_.max_sync_audio_seconds, length));
      }
    } else if (wait && duration.value_or(0.0) > config_.max_sync_audio_seconds) {
      refuse(413, "too_long",
             voiceprint
                 ? fmt::format("a voiceprint is made of at most {:.0f} s of audio (this is {:.0f} "
                               "s); send a range of it (start, end)",
                               config_.max_sync_audio_seconds, *duration)
                 : fmt::format("POST /v1/diarize takes at most {:.0f} s of audio (this is {:.0f} "
                               "s); submit it to POST /v1/jobs and poll",
                               config_.max_sync_audio_seconds, *duration));
    }
    if (range) {
      std::vector<float> samples;
      try {
        samples = audio::decode_range(readable, start.value_or(0.0), end);
      } catch (const audio::EmptyRangeError& error) {
        refuse(422, "invalid_parameter", error.what());
      } catch (const Error& error) {
        const std::string client_name = job.options["filename"];
        refuse(415, "unsupported_audio",
               replace_all(replace_all(error.what(), readable.string(), client_name),
                           job.audio.string(), client_name));
      }
      if (static_cast<double>(samples.size()) / kSampleRate > config_.max_sync_audio_seconds) {
        refuse(413, "too_long",
               fmt::format("a voiceprint is made of at most {:.0f} s of audio; send a shorter "
                           "range (start, end)",
                           config_.max_sync_audio_seconds));
      }
      // The job runs on the range alone; the upload is not kept.
      if (has_audio) {
        std::error_code ignored;
        fs::remove(job.audio, ignored);
      }
      job.options.erase("server_file");
      job.audio = folder / "voiceprint.wav";
      job.audio_seconds = static_cast<double>(samples.size()) / kSampleRate;
      try {
        write_file_atomically(job.audio, float_wav(samples));
      } catch (const Error& error) {
        refuse_storage(error, "storing the recording's range");
      }
    }
    if (form.has("transcript")) {
      const auto& part = form.part("transcript");
      job.transcript = folder / ("transcript" + safe_extension(part.filename));
      try {
        write_file_atomically(job.transcript, part.content);
      } catch (const Error& error) {
        refuse_storage(error, "storing the transcript");
      }
      try {
        // As the job's result will read it: in its transcript_format (job_configuration checked
        // the value above).
        transcript::read_transcript(job.transcript,
                                    pipeline::transcript_options(job.options).format);
      } catch (const Error& error) {
        refuse(422, "invalid_transcript",
               replace_all(error.what(), job.transcript.string(),
                           fs::path(part.filename).filename().string()));
      }
    }
    try {
      store_.add(job);
    } catch (const Error& error) {
      refuse_storage(error, "recording the job");
    }
  } catch (...) {
    std::error_code error;
    fs::remove_all(folder, error);
    throw;
  }
  queue_.wake();
  if (!wait) {
    write_json(response, 202, {{"id", job.id}, {"url", "/v1/jobs/" + job.id}});
    return;
  }
  const auto finished = queue_.wait_until_finished(job.id, std::chrono::minutes(10));
  if (voiceprint) {
    const std::optional<double> range_start =
        start || end ? std::optional<double>(start.value_or(0.0)) : std::nullopt;
    finish_voiceprint(job, finished, name, range_start, response);
    return;
  }
  if (!finished || finished->state != JobState::kDone) {
    if (finished &&
        (finished->state == JobState::kQueued || finished->state == JobState::kRunning)) {
      refuse(504, "timeout",
             fmt::format("not finished in 10 minutes; poll /v1/jobs/{} for it", job.id));
    }
    refuse(422, "failed", finished ? finished->error : "the job was removed");
  }
  response.set_header("Location", "/v1/jobs/" + job.id);
  answer_result(job.id, format, response);
}

void HttpApi::answer_job(const std::string& id, httplib::Response& response) {
  const auto job = store_.find(id);
  if (!job) refuse(404, "not_found", "no such job");
  write_json(response, 200, job_json(*job, queue_.progress(id), engine_.warning));
}

void HttpApi::answer_result(const std::string& id, const std::string& format,
                            httplib::Response& response) {
  const auto job = store_.find(id);
  if (!job) refuse(404, "not_found", "no such job");
  if (job->state == JobState::kCancelled) {
    refuse(409, "cancelled", "the job was cancelled; it has no result");
  }
  if (job->state == JobState::kFailed) {
    refuse(409, "failed", fmt::format("the job failed, so it has no result: {}", job->error));
  }
  if (job->state != JobState::kDone) {
    refuse(409, "not_done",
           fmt::format("the job is {}; its result comes when it is done", to_string(job->state)));
  }
  const auto formats = result_formats();
  if (std::find(formats.begin(), formats.end(), format) == formats.end()) {
    refuse(422, "invalid_parameter",
           fmt::format("format '{}': this job's result comes as {}", format,
                       fmt::join(formats, ", ")));
  }
  std::ifstream file(store_.job_folder(id) / ("result." + format), std::ios::binary);
  // A job finished by an older parley kept only rttm, json and txt without a transcript.
  if (!file && (format == "srt" || format == "vtt") && job->transcript.empty()) {
    refuse(404, "not_found",
           fmt::format("this job finished before parley wrote {} results; ask for rttm, json or "
                       "txt, or submit the recording again",
                       format));
  }
  if (!file) refuse(500, "internal", "the result file is missing from the state folder");
  std::ostringstream text;
  text << file.rdbuf();
  response.status = 200;
  response.set_content(text.str(), result_content_type(format));
}

void HttpApi::delete_job(const std::string& id, httplib::Response& response) {
  const auto job = store_.find(id);
  if (!job) refuse(404, "not_found", "no such job");
  if (job->state == JobState::kQueued || job->state == JobState::kRunning) {
    const bool cancelled = store_.cancel(id);
    queue_.wake();
    const auto now = store_.find(id);
    if (!now) refuse(404, "not_found", "no such job");
    // A running job's cancellation takes effect when its run ends.
    write_json(response, cancelled ? 200 : 202,
               job_json(*now, queue_.progress(id), engine_.warning));
    return;
  }
  store_.remove(id);
  response.status = 204;
}

void HttpApi::list_jobs(const httplib::Request& request, httplib::Response& response) {
  constexpr std::size_t kMaxPage = 1000;
  const std::size_t offset = parse_index(request, "offset", 0, SIZE_MAX / 2);
  const std::size_t limit = parse_index(request, "limit", 100, kMaxPage);
  // A page of none would name itself as the next.
  if (limit == 0) refuse(422, "invalid_parameter", "limit: expected a whole number in [1, 1000]");
  const std::size_t total = store_.count();
  nlohmann::json jobs = nlohmann::json::array();
  for (const Job& job : store_.list(offset, limit)) {
    jobs.push_back(job_json(job, queue_.progress(job.id), engine_.warning));
  }
  nlohmann::json body = {{"jobs", jobs}, {"total", total}, {"offset", offset}, {"limit", limit}};
  body["next"] =
      offset + limit < total
          ? nlohmann::json(fmt::format("/v1/jobs?offset={}&limit={}", offset + limit, limit))
          : nlohmann::json();
  write_json(response, 200, body);
}

MetricsSnapshot HttpApi::snapshot() const {
  MetricsSnapshot snapshot;
  snapshot.jobs_by_state = store_.count_by_state();
  snapshot.queue_depth = snapshot.jobs_by_state[JobState::kQueued];
  if (engine_.accelerator) {
    for (const int device : engine_.devices) {
      if (const auto memory = runtime::query_device_memory(*engine_.accelerator, device)) {
        snapshot.devices.push_back({std::string(runtime::provider_name(*engine_.accelerator)),
                                    device, memory->total_bytes, memory->free_bytes});
      }
    }
  }
  return snapshot;
}

namespace {

// The library's answer for one voiceprint, by id.
nlohmann::json voiceprint_json(const identity::SpeakerLibrary& library, std::int64_t id) {
  for (const auto& entry : library.list()) {
    if (entry.id == id) return nlohmann::json::parse(identity::listing_json(entry).dump());
  }
  // Removed by another client between the two calls.
  return {{"id", id}};
}

std::string read_text_file(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return {};
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

}  // namespace

std::unique_ptr<identity::SpeakerLibrary> HttpApi::open_library() const {
  if (engine_.voiceprints.empty()) refuse_no_library();
  try {
    return std::make_unique<identity::SpeakerLibrary>(engine_.voiceprints);
  } catch (const Error& error) {
    refuse_storage(error, "opening the speaker library");
  }
}

std::string HttpApi::read_json_body(const httplib::Request& request,
                                    const httplib::ContentReader& reader,
                                    httplib::Response& response, std::size_t limit) {
  if (!is_json(request)) {
    close_connection(response);
    refuse(415, "unsupported_media_type", "send a JSON body (Content-Type: application/json)");
  }
  std::string body;
  bool too_large = false;
  const bool read = reader([&](const char* bytes, std::size_t size) {
    if (body.size() + size > limit) {
      too_large = true;
      return false;
    }
    body.append(bytes, size);
    return true;
  });
  if (!read) {
    close_connection(response);
    if (too_large) {
      refuse(413, "too_large",
             fmt::format("the body is larger than this endpoint takes ({} KiB)", limit >> 10));
    }
    refuse(400, "bad_request",
           "the body could not be read: it was cut short, or paused longer than the server waits");
  }
  GuardedServer::release_body_slot();
  return body;
}

void HttpApi::finish_voiceprint(const Job& job, const std::optional<Job>& finished,
                                const std::string& name, std::optional<double> start,
                                httplib::Response& response) {
  if (finished && (finished->state == JobState::kQueued || finished->state == JobState::kRunning)) {
    // Nobody waits for it any more: it is cancelled instead of adding a voiceprint later.
    store_.cancel(job.id);
    queue_.wake();
    refuse(504, "timeout",
           "the voiceprint's recording was not diarized within 10 minutes (the queue is long); "
           "nothing was added, try again later");
  }
  // The job was only the way to the engine: it goes, whatever came of it.
  const auto removed = std::shared_ptr<void>(nullptr, [this, id = job.id](void*) {
    try {
      store_.remove(id);
    } catch (const std::exception& error) {
      spdlog::error("job {}: cannot remove it: {}", id, error.what());
    }
  });
  if (!finished || finished->state != JobState::kDone) {
    refuse(422, "failed", finished ? finished->error : "the job was removed");
  }
  const std::string filename = job.options.value("filename", job.uri);
  identity::Voiceprint voiceprint;
  try {
    voiceprint = identity::voiceprint_from_one_speaker_json(
        read_text_file(store_.job_folder(job.id) / "result.json"), filename,
        engine_.embedding_model_digest, config_.embedding_mode());
  } catch (const Error& error) {
    refuse(422, "no_voiceprint", error.what());
  }
  std::string source = filename;
  if (start) {
    source += fmt::format(" {:.3f}-{:.3f}", *start, *start + finished->audio_seconds);
  }
  const auto library = open_library();
  const std::int64_t id = library->add(name, voiceprint, source);
  write_json(response, 201, {{"voiceprint", voiceprint_json(*library, id)}});
}

void HttpApi::add_voiceprint_from_job(const std::string& body, httplib::Response& response) {
  const nlohmann::json request = parse_object(body);
  const std::string name = required_string(request, "name", "the speaker's name");
  const std::string id = required_string(request, "job", "the id of a finished job");
  const std::string speaker =
      required_string(request, "speaker", "which speaker of the job's result (SPEAKER_xx)");
  check_name(name);
  if (!is_job_id(id)) refuse(404, "not_found", "no such job (ids are 32 hex digits)");
  const auto job = store_.find(id);
  if (!job) refuse(404, "not_found", "no such job");
  if (job->state != JobState::kDone) {
    refuse(409, "not_done",
           fmt::format("the job is {}; a voiceprint comes from a finished job's result",
                       to_string(job->state)));
  }
  const fs::path folder = store_.job_folder(id);
  // The result's centroids are of the model that computed them, which the server may have
  // changed since.
  std::string digest = read_text_file(folder / kEmbeddingModelFile);
  while (!digest.empty() && std::isspace(static_cast<unsigned char>(digest.back()))) {
    digest.pop_back();
  }
  if (digest.empty()) {
    refuse(409, "unknown_model",
           "this job's result does not record which embedding model computed it (it finished "
           "before the server kept that); submit the recording again");
  }
  identity::Voiceprint voiceprint;
  try {
    voiceprint = identity::voiceprint_from_result_json(read_text_file(folder / "result.json"),
                                                       speaker, digest, config_.embedding_mode());
    identity::check_model(voiceprint, engine_.embedding_model_digest,
                          fmt::format("job {}'s result", id));
  } catch (const Error& error) {
    refuse(422, "no_voiceprint", valid_utf8(error.what()));
  }
  const std::string source =
      fmt::format("{} {}", job->options.value("filename", job->uri), valid_utf8(speaker));
  const auto library = open_library();
  const std::int64_t added = library->add(name, voiceprint, source);
  write_json(response, 201, {{"voiceprint", voiceprint_json(*library, added)}});
}

void HttpApi::rename_voiceprints(const std::string& name, const std::string& body,
                                 httplib::Response& response) {
  const nlohmann::json request = parse_object(body);
  const std::string to = required_string(request, "name", "the new name");
  bool merge = false;
  if (const auto found = request.find("merge"); found != request.end() && !found->is_null()) {
    if (!found->is_boolean()) refuse(422, "invalid_field", "'merge' must be true or false");
    merge = found->get<bool>();
  }
  check_name(to);
  const auto library = open_library();
  std::size_t renamed = 0;
  try {
    renamed = library->rename(name, to, merge);
  } catch (const Error& error) {
    const auto entries = library->list();
    if (std::any_of(entries.begin(), entries.end(),
                    [&](const identity::LibraryEntry& entry) { return entry.name == to; })) {
      refuse(409, "name_taken",
             fmt::format("the library already has a speaker named {}: pick another name, or "
                         "send \"merge\": true to join the two",
                         to));
    }
    throw;
  }
  if (renamed == 0) {
    refuse(404, "not_found", fmt::format("the library has no speaker named {}", valid_utf8(name)));
  }
  write_json(response, 200, {{"name", to}, {"renamed", renamed}});
}

void HttpApi::remove_voiceprints(const std::string& name, httplib::Response& response) {
  const std::size_t removed = open_library()->remove(name);
  if (removed == 0) {
    refuse(404, "not_found", fmt::format("the library has no speaker named {}", valid_utf8(name)));
  }
  write_json(response, 200, {{"name", name}, {"removed", removed}});
}

void HttpApi::import_voiceprints(const std::string& body, httplib::Response& response) {
  const auto library = open_library();
  std::size_t imported = 0;
  try {
    imported = library->import_json(body, engine_.embedding_model_digest);
  } catch (const Error& error) {
    refuse(422, "invalid_library", valid_utf8(error.what()));
  }
  write_json(response, 201, {{"imported", imported}});
}

void HttpApi::add_voiceprint_routes() {
  httplib::Server& server = server_;
  const auto guarded_body = [](auto handler) {
    return [handler](const httplib::Request& request, httplib::Response& response,
                     const httplib::ContentReader& reader) {
      try {
        handler(request, response, reader);
      } catch (const HttpError& error) {
        write_error(response, error);
      }
    };
  };
  server.Get("/v1/voiceprints",
             guarded([this](const httplib::Request&, httplib::Response& response) {
               nlohmann::json list = nlohmann::json::array();
               for (const auto& entry : open_library()->list()) {
                 list.push_back(nlohmann::json::parse(identity::listing_json(entry).dump()));
               }
               write_json(response, 200, {{"voiceprints", list}});
             }));
  server.Get("/v1/voiceprints/export",
             guarded([this](const httplib::Request&, httplib::Response& response) {
               response.set_content(open_library()->export_json(), "application/json");
             }));
  // A form with a recording, or JSON naming a finished job's speaker.
  server.Post("/v1/voiceprints",
              guarded_body([this](const httplib::Request& request, httplib::Response& response,
                                  const httplib::ContentReader& reader) {
                if (engine_.voiceprints.empty()) {
                  close_connection(response);
                  refuse_no_library();
                }
                if (request.is_multipart_form_data()) {
                  accept_job(request, reader, response, Submission::kVoiceprint);
                  return;
                }
                if (!is_json(request)) {
                  close_connection(response);
                  refuse(415, "unsupported_media_type",
                         "send a multipart/form-data form with the recording in 'audio' and the "
                         "name in 'name', or JSON {\"name\", \"job\", \"speaker\"}");
                }
                add_voiceprint_from_job(read_json_body(request, reader, response, kMaxJsonBytes),
                                        response);
              }));
  server.Post("/v1/voiceprints/import",
              guarded_body([this](const httplib::Request& request, httplib::Response& response,
                                  const httplib::ContentReader& reader) {
                if (engine_.voiceprints.empty()) {
                  close_connection(response);
                  refuse_no_library();
                }
                import_voiceprints(read_json_body(request, reader, response, kMaxLibraryJsonBytes),
                                   response);
              }));
  server.Patch(R"(/v1/voiceprints/([^/]+))",
               guarded_body([this](const httplib::Request& request, httplib::Response& response,
                                   const httplib::ContentReader& reader) {
                 if (engine_.voiceprints.empty()) {
                   close_connection(response);
                   refuse_no_library();
                 }
                 const std::string name = request.matches[1];
                 rename_voiceprints(name, read_json_body(request, reader, response, kMaxJsonBytes),
                                    response);
               }));
  server.Delete(R"(/v1/voiceprints/([^/]+))",
                guarded([this](const httplib::Request& request, httplib::Response& response) {
                  remove_voiceprints(request.matches[1], response);
                }));
}

}  // namespace parley::server
