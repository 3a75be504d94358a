#include "server/http_api.h"

#include <httplib.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "audio/audio_source.h"
#include "cluster/speaker_count.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "runtime/device_memory.h"
#include "server/embedded_files.h"
#include "server/result_documents.h"
#include "transcript/transcript.h"

namespace parley::server {
namespace fs = std::filesystem;
namespace {

// A request answered with an error: thrown by the handlers, written by guarded().
struct HttpError {
  int status;
  std::string code;
  std::string message;
  int retry_after_seconds = 0;
};

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
      return "the request is larger than this server takes (see max_upload_bytes)";
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

// A client's file name as the recording's name, as `parley diarize` names it (the stem, blanks
// as '_'); it is only ever written into results, never used as a path.
std::string recording_name(const std::string& filename) {
  std::string name = fs::path(filename).filename().stem().string();
  for (char& c : name) {
    if (std::isspace(static_cast<unsigned char>(c)) ||
        std::iscntrl(static_cast<unsigned char>(c))) {
      c = '_';
    }
  }
  return name.empty() ? "audio" : name;
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

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  if (from.empty()) return text;
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

int parse_count(const std::string& field, const std::string& value) {
  int number = 0;
  const auto [end, status] = std::from_chars(value.data(), value.data() + value.size(), number);
  if (status != std::errc() || end != value.data() + value.size() || number < 1) {
    refuse(422, "invalid_option",
           fmt::format("{}: expected a whole number of at least 1 (got '{}')", field, value));
  }
  return number;
}

bool parse_flag(const std::string& field, const std::string& value) {
  if (value == "true" || value == "1" || value == "on") return true;
  if (value == "false" || value == "0" || value == "off" || value.empty()) return false;
  refuse(422, "invalid_option", fmt::format("{}: expected true or false (got '{}')", field, value));
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

}  // namespace

HttpApi::HttpApi(ServerConfig config, EngineInfo engine, JobStore& store, JobRunner& runner,
                 Metrics& metrics)
    : HttpApi(std::move(config), std::move(engine), store, runner, metrics,
              std::make_unique<httplib::Server>()) {}

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

void HttpApi::add_routes() {
  httplib::Server& server = server_;
  const int threads = config_.http_threads;
  server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  // The form carries the recording and a transcript: room for both, each checked on its own.
  server.set_payload_max_length(config_.max_upload_bytes + (std::size_t{16} << 20));
  server.set_read_timeout(120, 0);
  server.set_write_timeout(120, 0);

  server.set_pre_routing_handler([this](const httplib::Request& request,
                                        httplib::Response& response) {
    if (config_.token.empty() || request.path == "/v1/health" || request.path == "/") {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    const std::string header = request.get_header_value("Authorization");
    const std::string prefix = "Bearer ";
    if (header.rfind(prefix, 0) == 0 && same_token(header.substr(prefix.size()), config_.token)) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    response.set_header("WWW-Authenticate", "Bearer");
    write_error(response, {401, "unauthorized",
                           "send the server's token as 'Authorization: Bearer <token>'"});
    return httplib::Server::HandlerResponse::Handled;
  });
  server.set_error_handler(httplib::Server::HandlerWithResponse(
      [](const httplib::Request&, httplib::Response& response) {
        if (!response.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        write_error(response, HttpError{response.status, status_code_name(response.status),
                                        status_text(response.status)});
        return httplib::Server::HandlerResponse::Handled;
      }));
  server.set_exception_handler(
      [](const httplib::Request&, httplib::Response& response, std::exception_ptr exception) {
        std::string message = "unknown error";
        try {
          std::rethrow_exception(exception);
        } catch (const std::exception& error) {
          message = error.what();
        } catch (...) {
        }
        spdlog::error("request failed: {}", message);
        write_error(response, {500, "internal", message});
      });
  server.set_logger([this](const httplib::Request&, const httplib::Response& response) {
    metrics_.count_request(response.status);
  });

  // Every handler's refusals become JSON errors.
  const auto guarded = [](auto handler) {
    return [handler](const httplib::Request& request, httplib::Response& response) {
      try {
        handler(request, response);
      } catch (const HttpError& error) {
        write_error(response, error);
      }
    };
  };
  const auto job_id = [](const httplib::Request& request) {
    const std::string id = request.matches[1];
    if (!is_job_id(id)) refuse(404, "not_found", "no such job (ids are 32 hex digits)");
    return id;
  };

  server.Get("/", [](const httplib::Request&, httplib::Response& response) {
    response.set_content(std::string(web_page()), "text/html; charset=utf-8");
  });
  server.Get("/v1/openapi.json", [](const httplib::Request&, httplib::Response& response) {
    response.set_content(std::string(openapi_document()), "application/json");
  });
  server.Get("/v1/health", [this](const httplib::Request&, httplib::Response& response) {
    write_json(response, 200,
               {{"status", "ok"},
                {"models_loaded", true},
                {"engines", engine_.engines},
                {"providers", engine_.providers},
                {"devices", engine_.devices},
                {"queue_depth", queued_jobs(store_)},
                {"settings",
                 {{"step", config_.step_seconds},
                  {"clustering", config_.clustering},
                  {"embedding_mode", config_.embedding_mode}}}});
  });
  server.Get("/metrics", [this](const httplib::Request&, httplib::Response& response) {
    response.set_content(metrics_.render(snapshot()), "text/plain; version=0.0.4; charset=utf-8");
  });
  server.Post("/v1/jobs",
              guarded([this](const httplib::Request& request, httplib::Response& response) {
                accept_job(request, response, false);
              }));
  server.Post("/v1/diarize",
              guarded([this](const httplib::Request& request, httplib::Response& response) {
                accept_job(request, response, true);
              }));
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
               answer_result(
                   job_id(request),
                   request.has_param("format") ? request.get_param_value("format") : "rttm",
                   response);
             }));
  server.Delete(R"(/v1/jobs/([^/]+))", guarded([this, job_id](const httplib::Request& request,
                                                              httplib::Response& response) {
                  delete_job(job_id(request), response);
                }));
}

namespace {

// `engine_progress`: where the engine holds the job. A queued job it holds is being decoded
// (or waits, decoded, for an engine); it is running once the networks start on it.
nlohmann::json job_json(const Job& job, std::optional<double> engine_progress) {
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
  if (job.started > 0.0) body["started"] = job.started;
  if (job.finished > 0.0) body["finished"] = job.finished;
  if (job.state == JobState::kDone) {
    body["result_url"] = "/v1/jobs/" + job.id + "/result";
    body["formats"] = result_formats(!job.transcript.empty());
  }
  return body;
}

}  // namespace

void HttpApi::accept_job(const httplib::Request& request, httplib::Response& response, bool wait) {
  if (!request.is_multipart_form_data()) {
    refuse(415, "unsupported_media_type",
           "send a multipart/form-data form with the recording in the field 'audio'");
  }
  // The fields, as the CLI's flags are named.
  static const std::vector<std::string> known = {
      "audio", "path",       "transcript",     "num_speakers", "min_speakers", "max_speakers",
      "step",  "clustering", "embedding_mode", "exclusive",    "format"};
  for (const auto& [name, field] : request.files) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      refuse(422, "unknown_field",
             fmt::format("unknown form field '{}' (see /v1/openapi.json for the fields)", name));
    }
  }
  const auto field = [&](const char* name) -> std::optional<std::string> {
    if (!request.has_file(name)) return std::nullopt;
    return request.get_file_value(name).content;
  };

  Job job;
  cluster::SpeakerCountConstraints speakers;
  if (auto value = field("num_speakers"))
    speakers.num_speakers = parse_count("num_speakers", *value);
  if (auto value = field("min_speakers"))
    speakers.min_speakers = parse_count("min_speakers", *value);
  if (auto value = field("max_speakers"))
    speakers.max_speakers = parse_count("max_speakers", *value);
  try {
    speakers.validate();
  } catch (const Error& error) {
    refuse(422, "invalid_option", error.what());
  }
  if (speakers.num_speakers) job.options["num_speakers"] = *speakers.num_speakers;
  if (speakers.min_speakers) job.options["min_speakers"] = *speakers.min_speakers;
  if (speakers.max_speakers) job.options["max_speakers"] = *speakers.max_speakers;
  if (auto value = field("exclusive")) job.options["exclusive"] = parse_flag("exclusive", *value);
  // The engine's model settings are fixed when the server starts.
  if (auto value = field("step")) {
    double step = 0.0;
    const auto [end, status] = std::from_chars(value->data(), value->data() + value->size(), step);
    if (status != std::errc() || end != value->data() + value->size() ||
        step != config_.step_seconds) {
      refuse(422, "setting_fixed",
             fmt::format("step: the server runs with step {} (a server's model settings are fixed "
                         "when it starts; got '{}')",
                         config_.step_seconds, *value));
    }
  }
  for (const auto& [name, fixed] : {std::pair{"clustering", config_.clustering},
                                    std::pair{"embedding_mode", config_.embedding_mode}}) {
    if (auto value = field(name); value && *value != fixed) {
      refuse(422, "setting_fixed",
             fmt::format("{}: the server runs with {} {} (a server's model settings are fixed when "
                         "it starts; got '{}')",
                         name, name, fixed, *value));
    }
  }
  const std::string format = field("format").value_or(wait ? "json" : "rttm");
  const bool with_transcript = request.has_file("transcript");
  const auto formats = result_formats(with_transcript);
  if (std::find(formats.begin(), formats.end(), format) == formats.end()) {
    refuse(422, "invalid_option",
           fmt::format("format '{}': expected one of {}", format, fmt::join(formats, ", ")));
  }

  const bool has_audio = request.has_file("audio");
  const bool has_path = request.has_file("path");
  if (has_audio == has_path) {
    refuse(422, "missing_audio",
           "send the recording in the form field 'audio' (or, where the server allows it, a "
           "server file in 'path'), one of the two");
  }
  if (has_audio && request.get_file_value("audio").content.size() > config_.max_upload_bytes) {
    refuse(413, "too_large",
           fmt::format("the recording is larger than this server takes ({} MiB)",
                       config_.max_upload_bytes >> 20));
  }
  if (with_transcript &&
      request.get_file_value("transcript").content.size() > (std::size_t{16} << 20)) {
    refuse(413, "too_large", "the transcript is larger than this server takes (16 MiB)");
  }
  fs::path server_file;
  std::string filename;
  if (has_path) {
    if (config_.allow_paths.empty()) {
      refuse(403, "forbidden",
             "this server takes no server-side paths (it was started without allow_paths); "
             "upload the recording in 'audio'");
    }
    const std::string named = request.get_file_value("path").content;
    std::error_code error;
    const fs::path root = fs::canonical(config_.allow_paths, error);
    const fs::path resolved = fs::weakly_canonical(root / named, error);
    const fs::path inside = resolved.lexically_relative(root);
    if (error || named.empty() || inside.empty() || *inside.begin() == ".." ||
        fs::path(named).is_absolute()) {
      refuse(403, "forbidden",
             "path: name a file inside the server's allowed folder, relative to it");
    }
    if (!fs::is_regular_file(resolved, error)) {
      refuse(404, "not_found", fmt::format("path: no file '{}' in the allowed folder", named));
    }
    server_file = resolved;
    filename = valid_utf8(named);
  } else {
    filename = valid_utf8(request.get_file_value("audio").filename);
  }

  // Queue full: refused before anything is written.
  std::unique_lock admission(admission_);
  const std::size_t queued = queued_jobs(store_);
  if (queued >= config_.max_queue) {
    HttpError error{429, "queue_full",
                    fmt::format("the queue is full ({} jobs waiting); try again later", queued)};
    error.retry_after_seconds = 10;
    throw error;
  }
  admission.unlock();

  job.id = store_.new_job_folder();
  const fs::path folder = store_.job_folder(job.id);
  job.uri = recording_name(filename);
  job.options["filename"] = fs::path(filename).filename().string();
  try {
    if (has_audio) {
      job.audio = folder / ("audio" + safe_extension(filename));
      write_file_atomically(job.audio, request.get_file_value("audio").content);
    } else {
      job.audio = server_file;
    }
    std::optional<double> duration;
    try {
      duration = audio::open_audio_source(job.audio)->info().duration_seconds();
    } catch (const Error& error) {
      refuse(415, "unsupported_audio",
             replace_all(error.what(), job.audio.string(), job.options["filename"]));
    }
    if (duration.value_or(0.0) > config_.max_audio_seconds) {
      refuse(413, "too_long",
             fmt::format("the recording is {:.2f} h long; this server takes at most {:.2f} h",
                         *duration / 3600.0, config_.max_audio_seconds / 3600.0));
    }
    if (wait && duration.value_or(0.0) > config_.max_sync_audio_seconds) {
      refuse(413, "too_long",
             fmt::format("POST /v1/diarize takes at most {:.0f} s of audio (this is {:.0f} s); "
                         "submit it to POST /v1/jobs and poll",
                         config_.max_sync_audio_seconds, *duration));
    }
    if (with_transcript) {
      const auto& part = request.get_file_value("transcript");
      job.transcript = folder / ("transcript" + safe_extension(part.filename));
      write_file_atomically(job.transcript, part.content);
      try {
        transcript::read_transcript(job.transcript);
      } catch (const Error& error) {
        refuse(422, "invalid_transcript",
               replace_all(error.what(), job.transcript.string(),
                           fs::path(part.filename).filename().string()));
      }
    }
    store_.add(job);
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
  write_json(response, 200, job_json(*job, queue_.progress(id)));
}

void HttpApi::answer_result(const std::string& id, const std::string& format,
                            httplib::Response& response) {
  const auto job = store_.find(id);
  if (!job) refuse(404, "not_found", "no such job");
  if (job->state != JobState::kDone) {
    refuse(409, "not_done",
           fmt::format("the job is {}; its result comes when it is done", to_string(job->state)));
  }
  const auto formats = result_formats(!job->transcript.empty());
  if (std::find(formats.begin(), formats.end(), format) == formats.end()) {
    refuse(422, "invalid_parameter",
           fmt::format("format '{}': this job's result comes as {}", format,
                       fmt::join(formats, ", ")));
  }
  std::ifstream file(store_.job_folder(id) / ("result." + format), std::ios::binary);
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
    write_json(response, cancelled ? 200 : 202, job_json(*now, queue_.progress(id)));
    return;
  }
  store_.remove(id);
  response.status = 204;
}

void HttpApi::list_jobs(const httplib::Request& request, httplib::Response& response) {
  constexpr std::size_t kMaxPage = 1000;
  const std::size_t offset = parse_index(request, "offset", 0, SIZE_MAX / 2);
  const std::size_t limit = parse_index(request, "limit", 100, kMaxPage);
  const std::size_t total = store_.count();
  nlohmann::json jobs = nlohmann::json::array();
  for (const Job& job : store_.list(offset, limit)) {
    jobs.push_back(job_json(job, queue_.progress(job.id)));
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

}  // namespace parley::server
