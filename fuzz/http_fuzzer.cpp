// `parley serve`'s HTTP request handling: the fuzzer's bytes are one connection's worth of
// request, read by cpp-httplib's own parser (request line, headers, chunked and multipart
// bodies) and dispatched to the real routes of server::HttpApi over a real job store in a
// temporary state folder, as upstream's test/fuzzing/server_fuzzer.cc drives httplib::Server.
// The engine is a stand-in that finishes every queued job at once with an empty result, so no
// model is needed and POST /v1/diarize answers instead of waiting; the speaker library is a real
// one in the temporary folder.

// Before httplib.h: clang 14 rejects Eigen's (through the pipeline's headers) after it.
#include "server/http_api.h"

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "fuzz_input.h"
#include "server/result_documents.h"

namespace {

namespace fs = std::filesystem;
using parley::server::Job;
using parley::server::JobState;
using parley::server::JobStore;

// One connection: the request's bytes in, the status line of the answer kept.
class FuzzedStream : public httplib::Stream {
 public:
  explicit FuzzedStream(std::string_view input) : input_(input) {}
  bool is_readable() const override { return true; }
  bool is_writable() const override { return true; }
  ssize_t read(char* out, std::size_t size) override {
    size = std::min(size, input_.size());
    std::memcpy(out, input_.data(), size);
    input_.remove_prefix(size);
    return static_cast<ssize_t>(size);
  }
  ssize_t write(const char* bytes, std::size_t size) override {
    if (answer_start_.size() < 16) answer_start_.append(bytes, std::min<std::size_t>(size, 16));
    return static_cast<ssize_t>(size);
  }
  const std::string& answer_start() const { return answer_start_; }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = "127.0.0.1";
    port = 40000;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = "127.0.0.1";
    port = 8080;
  }
  socket_t socket() const override { return 0; }

 private:
  std::string_view input_;
  std::string answer_start_;
};

// process_request is protected: the fuzzer's server is a subclass.
class FuzzedServer : public httplib::Server {
 public:
  // The answer's status line.
  std::string handle(std::string_view input) {
    FuzzedStream stream(input);
    bool connection_closed = false;
    process_request(stream, true, connection_closed, nullptr);
    return stream.answer_start();
  }
};

// Runs each queued job to an empty result as soon as it is queued.
class StandInRunner : public parley::server::JobRunner {
 public:
  explicit StandInRunner(JobStore& store) : store_(store) {}
  void wake() override {
    while (const auto job = store_.oldest_queued(parley::server::kMaxJobCrashes, {})) {
      if (!store_.start(job->id)) continue;
      parley::pipeline::DiarizationResult result;
      result.uri = job->uri;
      for (const auto& [format, text] :
           parley::server::result_documents(result, false, job->transcript)) {
        std::ofstream(store_.job_folder(job->id) / ("result." + format)) << text;
      }
      store_.mark_done(job->id, 0.0, nlohmann::json::object());
    }
  }
  std::optional<double> progress(const std::string&) const override { return std::nullopt; }
  std::optional<Job> wait_until_finished(const std::string& id,
                                         std::chrono::steady_clock::duration) override {
    return store_.find(id);
  }

 private:
  JobStore& store_;
};

// A live stream that takes any audio and says nothing: /v1/stream's upgrade (parameters, token,
// limits) is fuzzed; the session itself needs a socket (fuzz_websocket has its frames).
class SilentStream : public parley::server::LiveStream {
 public:
  void push(std::string_view, std::chrono::steady_clock::time_point) override {}
  std::vector<std::string> take_events() override { return {}; }
  std::vector<std::string> finish() override { return {}; }
};

// A 0.1 s silent WAV, the file clients may name in the form field 'path'.
void write_silent_wav(const fs::path& path) {
  const std::uint32_t samples = 1600;
  const std::uint32_t data_bytes = samples * 2;
  std::string header(44, '\0');
  std::memcpy(&header[0], "RIFF", 4);
  std::memcpy(&header[8], "WAVEfmt ", 8);
  std::memcpy(&header[36], "data", 4);
  const auto put32 = [&](std::size_t at, std::uint32_t value) {
    std::memcpy(&header[at], &value, 4);
  };
  const auto put16 = [&](std::size_t at, std::uint16_t value) {
    std::memcpy(&header[at], &value, 2);
  };
  put32(4, 36 + data_bytes);
  put32(16, 16);
  put16(20, 1);
  put16(22, 1);
  put32(24, 16000);
  put32(28, 32000);
  put16(32, 2);
  put16(34, 16);
  put32(40, data_bytes);
  std::ofstream(path, std::ios::binary) << header << std::string(data_bytes, '\0');
}

struct Service {
  parley::TemporaryDirectory folder{"parley-fuzz-http-"};
  JobStore store{folder / "state"};
  StandInRunner runner{store};
  parley::server::Metrics metrics;
  FuzzedServer server;
  parley::server::HttpApi api;

  Service() : api(config(folder), engine(folder), store, runner, metrics, server) {
    api.enable_live_streams(
        [](const parley::server::LiveStreamRequest&) { return std::make_unique<SilentStream>(); });
  }

  // A speaker library, so that fuzzed inputs reach /v1/voiceprints' handlers and SQLite.
  static parley::server::EngineInfo engine(const parley::TemporaryDirectory& folder) {
    parley::server::EngineInfo engine;
    engine.voiceprints = folder / "team.db";
    engine.embedding_model_digest = std::string(64, 'a');
    return engine;
  }

  static parley::server::ServerConfig config(const parley::TemporaryDirectory& folder) {
    fs::create_directories(folder / "allowed");
    write_silent_wav(folder / "allowed" / "call.wav");
    parley::server::ServerConfig config;
    config.state_dir = folder / "state";
    config.token = "fuzz-token";
    config.allow_paths = folder / "allowed";
    // Small limits, so that fuzzed inputs reach the refusals.
    config.max_queue = 64;
    config.max_upload_bytes = 16384;
    config.max_audio_seconds = 60.0;
    config.max_sync_audio_seconds = 30.0;
    return config;
  }

  // Finished jobs would pile up in the state folder over millions of inputs.
  void forget_jobs() {
    // Imports would grow it too; each request opens it anew.
    std::error_code error;
    if (fs::file_size(folder / "team.db", error) > (std::uintmax_t{16} << 20)) {
      for (const char* suffix : {"", "-wal", "-shm"}) {
        fs::remove(folder / ("team.db" + std::string(suffix)), error);
      }
    }
    if (store.count() < 256) return;
    for (const Job& job : store.list(0, store.count())) store.remove(job.id);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static Service service;
  // A refusal is a 4xx with a JSON body, or a 501 for a transfer coding the server does not
  // implement (RFC 9112, 6.1). A 500 is what the server's exception handler makes of an
  // exception a handler did not expect ("internal" to the client): a finding, like anything that
  // escapes.
  const std::string status = service.server.handle(parley::fuzz::as_text(data, size));
  if (status.rfind("HTTP/1.1 500", 0) == 0) {
    std::fprintf(stderr, "answered %s\n", status.c_str());
    std::abort();
  }
  service.forget_jobs();
  return 0;
}
