#include "models/downloader.h"

#include <chrono>
#include <mutex>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include "core/error.h"
#include "core/sha256.h"
#include "models/model_files_test_support.h"
#include "testing/temporary_directory.h"

namespace parley::models {
namespace {

using parley::testing::TemporaryDirectory;
using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::read_bytes;
using testing::write_text;

std::string make_payload(std::size_t size) {
  std::string payload(size, '\0');
  std::uint32_t state = 12345;
  for (auto& byte : payload) {
    state = state * 1103515245u + 12345u;
    byte = static_cast<char>(state >> 16);
  }
  return payload;
}

std::string sha_of(const std::string& bytes) { return sha256_text(bytes); }

// A local HTTP server on 127.0.0.1: /model.bin honours Range requests, /norange.bin ignores
// them, /secret.bin answers 401. Records every Range header it receives.
class LocalServer {
 public:
  explicit LocalServer(std::string payload) : payload_(std::move(payload)) {
    server_.Get("/model.bin", [this](const httplib::Request& request, httplib::Response& response) {
      record(request);
      response.set_content(payload_, "application/octet-stream");  // httplib applies Range
    });
    server_.Get(
        "/norange.bin", [this](const httplib::Request& request, httplib::Response& response) {
          record(request);
          // A chunked body has no length to take a range of: httplib sends it whole.
          response.set_chunked_content_provider(
              "application/octet-stream", [this](std::size_t offset, httplib::DataSink& sink) {
                if (offset < payload_.size()) {
                  sink.write(payload_.data() + offset,
                             std::min<std::size_t>(65536, payload_.size() - offset));
                } else {
                  sink.done();
                }
                return true;
              });
        });
    server_.Get("/secret.bin", [](const httplib::Request&, httplib::Response& response) {
      response.status = 401;
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // stop() is a no-op until the accept loop runs; stopping earlier would hang join().
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~LocalServer() {
    server_.stop();
    thread_.join();
  }
  LocalServer(const LocalServer&) = delete;
  LocalServer& operator=(const LocalServer&) = delete;

  std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  std::vector<std::string> ranges() {
    std::lock_guard lock(mutex_);
    return ranges_;
  }

 private:
  void record(const httplib::Request& request) {
    std::lock_guard lock(mutex_);
    ranges_.push_back(request.get_header_value("Range"));
  }

  std::string payload_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mutex_;
  std::vector<std::string> ranges_;
};

DownloadOptions quiet_options() {
  DownloadOptions options;
  options.connect_timeout_seconds = 5;
  options.stall_timeout_seconds = 10;
  return options;
}

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

class Downloader : public ::testing::Test {
 protected:
  const std::string payload = make_payload(300'000);
  LocalServer server{payload};
  TemporaryDirectory dir{"download"};
  std::filesystem::path destination = dir / "sub" / "model.bin";
  std::filesystem::path partial = destination.string() + ".partial";
};

TEST_F(Downloader, FreshDownloadIsCheckedAndRenamed) {
  const auto result = download_file(server.url("/model.bin"), destination, payload.size(),
                                    sha_of(payload), quiet_options());
  EXPECT_FALSE(result.resumed);
  EXPECT_EQ(result.bytes, payload.size());
  EXPECT_EQ(result.sha256, sha_of(payload));
  EXPECT_EQ(read_bytes(destination), payload);
  EXPECT_FALSE(std::filesystem::exists(partial));
  EXPECT_EQ(server.ranges(), std::vector<std::string>{""});
}

TEST_F(Downloader, ResumesAPartialFileWithARangeRequest) {
  write_text(partial, payload.substr(0, 100'000));
  const auto result = download_file(server.url("/model.bin"), destination, payload.size(),
                                    sha_of(payload), quiet_options());
  EXPECT_TRUE(result.resumed);
  EXPECT_EQ(read_bytes(destination), payload);
  EXPECT_EQ(server.ranges(), std::vector<std::string>{"bytes=100000-"});
  EXPECT_FALSE(std::filesystem::exists(partial));
}

TEST_F(Downloader, CompletePartialFileIsJustRenamed) {
  write_text(partial, payload);
  const auto result = download_file(server.url("/model.bin"), destination, payload.size(),
                                    sha_of(payload), quiet_options());
  EXPECT_TRUE(result.resumed);
  EXPECT_EQ(read_bytes(destination), payload);
  EXPECT_TRUE(server.ranges().empty());
}

TEST_F(Downloader, ServerIgnoringRangeMakesItStartOver) {
  write_text(partial, payload.substr(0, 100'000));
  const auto result = download_file(server.url("/norange.bin"), destination, payload.size(),
                                    sha_of(payload), quiet_options());
  EXPECT_FALSE(result.resumed);
  EXPECT_EQ(read_bytes(destination), payload);
  EXPECT_EQ(server.ranges(), (std::vector<std::string>{"bytes=100000-", ""}));
}

TEST_F(Downloader, WrongBytesInAPartialFileAreRedownloaded) {
  write_text(partial, std::string(100'000, 'x'));
  const auto result = download_file(server.url("/model.bin"), destination, payload.size(),
                                    sha_of(payload), quiet_options());
  EXPECT_FALSE(result.resumed);
  EXPECT_EQ(read_bytes(destination), payload);
  EXPECT_EQ(server.ranges(), (std::vector<std::string>{"bytes=100000-", ""}));
}

TEST_F(Downloader, ChecksumMismatchNamesBothDigestsAndKeepsNothing) {
  const std::string wrong = sha_of("something else");
  const std::string message = error_of([&] {
    download_file(server.url("/model.bin"), destination, payload.size(), wrong, quiet_options());
  });
  EXPECT_THAT(message,
              HasSubstr("sha256 mismatch: expected " + wrong + ", actual " + sha_of(payload)));
  EXPECT_FALSE(std::filesystem::exists(destination));
  EXPECT_FALSE(std::filesystem::exists(partial));
}

TEST_F(Downloader, HttpErrorsSayWhatToDo) {
  EXPECT_THAT(error_of([&] {
                download_file(server.url("/missing.bin"), destination, std::nullopt, std::nullopt,
                              quiet_options());
              }),
              HasSubstr("does not exist (HTTP 404)"));
  EXPECT_THAT(error_of([&] {
                download_file(server.url("/secret.bin"), destination, std::nullopt, std::nullopt,
                              quiet_options());
              }),
              AllOf(HasSubstr("refused access (HTTP 401)"), HasSubstr("HF_TOKEN")));
  EXPECT_FALSE(std::filesystem::exists(destination));
}

TEST(DownloaderOffline, UnreachableHostFailsQuicklyWithAHelpfulMessage) {
  TemporaryDirectory dir("offline");
  const auto start = std::chrono::steady_clock::now();
  const std::string message = error_of([&] {
    download_file("http://127.0.0.1:9/voxceleb_resnet34_LM.onnx", dir / "model.onnx", std::nullopt,
                  std::nullopt, DownloadOptions{});
  });
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_LT(elapsed, std::chrono::seconds(5));
  EXPECT_THAT(message, AllOf(HasSubstr("cannot reach 127.0.0.1"), HasSubstr("looks offline"),
                             HasSubstr("copy it to " + (dir / "model.onnx").string()),
                             HasSubstr("parley models verify")));
  EXPECT_FALSE(std::filesystem::exists(dir / "model.onnx"));
  EXPECT_FALSE(std::filesystem::exists(dir / "model.onnx.partial"));
}

TEST_F(Downloader, FetchModelFallsBackToTheNextUrl) {
  ModelEntry entry;
  entry.id = "test-model";
  entry.file = "nested/test.bin";
  entry.size = payload.size();
  entry.sha256 = sha_of(payload);
  entry.urls = {"http://127.0.0.1:9/test.bin", server.url("/model.bin")};
  fetch_model(entry, dir.path(), quiet_options());
  EXPECT_EQ(read_bytes(dir / "nested/test.bin"), payload);
}

TEST_F(Downloader, FetchModelQuotesEveryFailure) {
  ModelEntry entry;
  entry.id = "test-model";
  entry.file = "test.bin";
  entry.urls = {"http://127.0.0.1:9/test.bin", server.url("/missing.bin")};
  const std::string message = error_of([&] { fetch_model(entry, dir.path(), quiet_options()); });
  EXPECT_THAT(message, AllOf(HasSubstr("no address of test-model worked"),
                             HasSubstr("looks offline"), HasSubstr("HTTP 404")));
}

TEST(FetchModel, AllHostsUnreachableIsOneSentenceAndLeavesNoFiles) {
  TemporaryDirectory dir("unreachable");
  ModelEntry entry;
  entry.id = "test-model";
  entry.file = "test.bin";
  entry.urls = {"http://127.0.0.1:9/test.bin", "http://127.0.0.2:9/test.bin"};
  const std::string message = error_of([&] { fetch_model(entry, dir.path(), DownloadOptions{}); });
  EXPECT_THAT(message,
              HasSubstr("cannot reach 127.0.0.1 or 127.0.0.2: this machine looks offline"));
  EXPECT_THAT(message, HasSubstr("download http://127.0.0.1:9/test.bin on a connected machine and "
                                 "copy it to " +
                                 (dir / "test.bin").string()));
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(FetchModel, SpeedTwinIsGeneratedNotDownloaded) {
  const ModelEntry& twin = Registry::builtin().get("resnet34-speed-twin");
  EXPECT_THAT(error_of([&] { fetch_model(twin, "/tmp/models", DownloadOptions{}); }),
              HasSubstr("is generated, not downloaded: run `/usr/bin/python3 "
                        "tools/make_speed_twin.py --output /tmp/models/resnet34-speed-twin.onnx`"));
}

}  // namespace
}  // namespace parley::models
