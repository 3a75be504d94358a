// /v1/stream end to end on loopback, with a stand-in stream diarizer (the transport, the upgrade,
// auth, limits, hostile frames, a client that leaves or stops reading, the server stopping).
// Before httplib.h: clang 14 rejects Eigen's (through the pipeline's headers) after it.
#include "server/http_api.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <thread>

#include "core/error.h"
#include "server/websocket.h"
#include "testing/temporary_directory.h"

namespace parley::server {
namespace {

namespace ws = websocket;
using Clock = std::chrono::steady_clock;
constexpr std::uint32_t kMask = 0x01020304;

// One event per push naming the frames it held; finish: an end event and the result.
class CountingStream : public LiveStream {
 public:
  explicit CountingStream(const LiveStreamRequest& request) : request_(request) {}
  void push(std::string_view pcm, Clock::time_point) override {
    const std::size_t frames = pcm.size() / request_.bytes_per_frame();
    total_ += frames;
    events_.push_back(nlohmann::json{{"type", "audio"}, {"frames", frames}}.dump());
  }
  std::vector<std::string> take_events() override { return std::exchange(events_, {}); }
  std::vector<std::string> finish() override {
    return {nlohmann::json{{"type", "end"}}.dump(),
            nlohmann::json{{"type", "result"}, {"frames", total_}}.dump()};
  }

 private:
  LiveStreamRequest request_;
  std::size_t total_ = 0;
  std::vector<std::string> events_;
};

class NoRunner : public JobRunner {
 public:
  void wake() override {}
  std::optional<double> progress(const std::string&) const override { return std::nullopt; }
  std::optional<Job> wait_until_finished(const std::string&, Clock::duration) override {
    return std::nullopt;
  }
};

struct Frame {
  ws::Opcode opcode;
  std::string payload;
};

// A WebSocket client with just enough of the protocol to test the server.
class Client {
 public:
  explicit Client(int port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
      throw Error("cannot connect");
    }
  }
  ~Client() { close(); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  // The answer's head to an upgrade request for `target`.
  std::string upgrade(const std::string& target, const std::string& headers = "") {
    return head("GET " + target +
                " HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n" +
                headers + "\r\n");
  }

  // The answer's head to the request `raw`.
  std::string head(const std::string& raw) {
    send_raw(raw);
    while (buffer_.find("\r\n\r\n") == std::string::npos) {
      if (!fill()) break;
    }
    const std::size_t end = buffer_.find("\r\n\r\n");
    if (end == std::string::npos) return buffer_;
    std::string answer = buffer_.substr(0, end + 4);
    buffer_.erase(0, end + 4);
    // An error's JSON body is not a frame.
    if (answer.rfind("HTTP/1.1 101", 0) != 0) buffer_.clear();
    return answer;
  }

  void send_raw(const std::string& bytes) {
    ASSERT_EQ(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
  }
  void send(ws::Opcode opcode, const std::string& payload) {
    send_raw(ws::encode_client_frame(opcode, payload, kMask));
  }

  // The server's next frame, or nothing once the connection ends (or 5 s pass).
  std::optional<Frame> read_frame() {
    while (true) {
      if (buffer_.size() >= 2) {
        const auto length = static_cast<std::uint8_t>(buffer_[1]) & 0x7F;
        const std::size_t extra = length == 126 ? 2 : length == 127 ? 8 : 0;
        std::uint64_t size = length;
        if (buffer_.size() >= 2 + extra && extra > 0) {
          size = 0;
          for (std::size_t k = 0; k < extra; ++k) {
            size = (size << 8) | static_cast<std::uint8_t>(buffer_[2 + k]);
          }
        }
        if (buffer_.size() >= 2 + extra && buffer_.size() >= 2 + extra + size) {
          Frame frame{static_cast<ws::Opcode>(buffer_[0] & 0x0F),
                      buffer_.substr(2 + extra, static_cast<std::size_t>(size))};
          buffer_.erase(0, 2 + extra + static_cast<std::size_t>(size));
          return frame;
        }
      }
      if (!fill()) return std::nullopt;
    }
  }

  // The frames up to and including the server's close.
  std::vector<Frame> read_until_close() {
    std::vector<Frame> frames;
    while (auto frame = read_frame()) {
      frames.push_back(*frame);
      if (frame->opcode == ws::Opcode::kClose) break;
    }
    return frames;
  }

  // The code of the server's close frame (0: none came).
  std::uint16_t close_code() {
    const auto frames = read_until_close();
    if (frames.empty() || frames.back().opcode != ws::Opcode::kClose) return 0;
    return ws::close_code(frames.back().payload);
  }

 private:
  bool fill() {
    pollfd entry{fd_, POLLIN, 0};
    if (::poll(&entry, 1, 5000) <= 0) return false;
    char chunk[4096];
    const ssize_t count = ::recv(fd_, chunk, sizeof(chunk), 0);
    if (count <= 0) return false;
    buffer_.append(chunk, static_cast<std::size_t>(count));
    return true;
  }

  int fd_;
  std::string buffer_;
};

class LiveStreamTest : public ::testing::Test {
 protected:
  void start(int max_streams = 4) {
    ServerConfig config;
    config.port = 0;
    config.state_dir = folder_ / "state";
    config.token = "secret";
    config.max_streams = max_streams;
    config.allow_final_recluster = allow_final_recluster_;
    store_ = std::make_unique<JobStore>(config.state_dir);
    api_ = std::make_unique<HttpApi>(config, EngineInfo{}, *store_, runner_, metrics_);
    api_->enable_live_streams([](const LiveStreamRequest& request) -> std::unique_ptr<LiveStream> {
      if (request.settings.count("latency") != 0 && request.settings.at("latency") == "bad") {
        throw Error("latency must be a number of seconds");
      }
      return std::make_unique<CountingStream>(request);
    });
    port_ = api_->bind();
    serving_ = std::thread([this] { api_->serve(); });
  }

  void TearDown() override {
    if (serving_.joinable()) {
      api_->stop();
      serving_.join();
    }
  }

  // Waits (at most 5 s) for the open stream count to become `count`.
  bool streams_become(std::size_t count) {
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    while (metrics_.active_streams() != count && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return metrics_.active_streams() == count;
  }

  testing::TemporaryDirectory folder_{"live-session-test"};
  NoRunner runner_;
  Metrics metrics_;
  std::unique_ptr<JobStore> store_;
  std::unique_ptr<HttpApi> api_;
  std::thread serving_;
  int port_ = 0;
  bool allow_final_recluster_ = true;
};

TEST_F(LiveStreamTest, StreamsEventsAndEndsWithTheResult) {
  start();
  Client client(port_);
  const std::string head = client.upgrade("/v1/stream?token=secret&rate=8000&step=0.5");
  ASSERT_EQ(head.rfind("HTTP/1.1 101", 0), 0u) << head;
  EXPECT_NE(head.find("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"), std::string::npos);
  EXPECT_TRUE(streams_become(1));
  client.send(ws::Opcode::kBinary, std::string(8000 * 2, '\0'));
  const auto event = client.read_frame();
  ASSERT_TRUE(event);
  EXPECT_EQ(event->opcode, ws::Opcode::kText);
  EXPECT_EQ(nlohmann::json::parse(event->payload)["frames"], 8000);
  client.send(ws::Opcode::kPing, "are you there");
  const auto pong = client.read_frame();
  ASSERT_TRUE(pong);
  EXPECT_EQ(pong->opcode, ws::Opcode::kPong);
  EXPECT_EQ(pong->payload, "are you there");
  client.send(ws::Opcode::kBinary, std::string(4000 * 2, '\0'));
  ASSERT_TRUE(client.read_frame());
  client.send(ws::Opcode::kText, R"({"type":"finish"})");
  const auto frames = client.read_until_close();
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(nlohmann::json::parse(frames[0].payload)["type"], "end");
  EXPECT_EQ(nlohmann::json::parse(frames[1].payload)["frames"], 12000);
  EXPECT_EQ(ws::close_code(frames[2].payload), ws::kNormal);
  client.send_raw(ws::encode_client_frame(ws::Opcode::kClose, std::string("\x03\xe8", 2), kMask));
  EXPECT_TRUE(streams_become(0));
  EXPECT_NE(metrics_.render({}).find("parley_live_audio_seconds_total 1.5\n"), std::string::npos);
}

TEST_F(LiveStreamTest, CloseFrameEndsTheStreamWithTheResult) {
  start();
  Client client(port_);
  ASSERT_EQ(client.upgrade("/v1/stream", "Authorization: Bearer secret\r\n").rfind("HTTP/1.1 101"),
            0u);
  client.send(ws::Opcode::kBinary, std::string(32, '\0'));
  ASSERT_TRUE(client.read_frame());
  client.send(ws::Opcode::kClose, std::string("\x03\xe8", 2));
  const auto frames = client.read_until_close();
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(nlohmann::json::parse(frames[1].payload)["type"], "result");
  EXPECT_EQ(ws::close_code(frames[2].payload), ws::kNormal);
  EXPECT_TRUE(streams_become(0));
}

TEST_F(LiveStreamTest, AuthAndRefusals) {
  start();
  EXPECT_EQ(Client(port_).upgrade("/v1/stream").rfind("HTTP/1.1 401", 0), 0u);
  EXPECT_EQ(Client(port_).upgrade("/v1/stream?token=wrong").rfind("HTTP/1.1 401", 0), 0u);
  {
    Client client(port_);
    const std::string head =
        client.upgrade("/v1/stream", "Sec-WebSocket-Protocol: parley, bearer.secret\r\n");
    ASSERT_EQ(head.rfind("HTTP/1.1 101", 0), 0u) << head;
    EXPECT_NE(head.find("Sec-WebSocket-Protocol: parley\r\n"), std::string::npos);
    EXPECT_EQ(head.find("secret"), std::string::npos);
  }
  EXPECT_EQ(Client(port_).upgrade("/v1/stream?token=secret&latency=bad").rfind("HTTP/1.1 400", 0),
            0u);
  EXPECT_EQ(Client(port_).upgrade("/v1/stream?token=secret&format=u8").rfind("HTTP/1.1 400", 0),
            0u);
  EXPECT_EQ(Client(port_).upgrade("/v1/stream?token=secret&rate=12").rfind("HTTP/1.1 400", 0), 0u);
  EXPECT_EQ(Client(port_).upgrade("/v1/stream?token=secret&color=red").rfind("HTTP/1.1 400", 0),
            0u);
  const std::string plain =
      Client(port_).head("GET /v1/stream?token=secret HTTP/1.1\r\nHost: localhost\r\n\r\n");
  EXPECT_EQ(plain.rfind("HTTP/1.1 426", 0), 0u) << plain;
  EXPECT_TRUE(streams_become(0));
}

TEST_F(LiveStreamTest, FinalReclusterIsRefusedWhereTheServerSaysSo) {
  allow_final_recluster_ = false;
  start();
  const std::string refused = Client(port_).upgrade("/v1/stream?token=secret&final_recluster=true");
  EXPECT_EQ(refused.rfind("HTTP/1.1 400", 0), 0u) << refused;
  EXPECT_EQ(
      Client(port_).upgrade("/v1/stream?token=secret&final_recluster=yes").rfind("HTTP/1.1 400", 0),
      0u);
  // Left out or false, the stream opens.
  EXPECT_EQ(Client(port_)
                .upgrade("/v1/stream?token=secret&final_recluster=false")
                .rfind("HTTP/1.1 101", 0),
            0u);
  EXPECT_EQ(Client(port_)
                .upgrade("/v1/stream?token=secret&max_speakers=1&match_threshold=0.5")
                .rfind("HTTP/1.1 101", 0),
            0u);
}

TEST_F(LiveStreamTest, StreamsBeyondTheLimitAre503) {
  start(1);
  Client first(port_);
  ASSERT_EQ(first.upgrade("/v1/stream?token=secret").rfind("HTTP/1.1 101", 0), 0u);
  const std::string second = Client(port_).upgrade("/v1/stream?token=secret");
  EXPECT_EQ(second.rfind("HTTP/1.1 503", 0), 0u) << second;
  EXPECT_NE(second.find("Retry-After: 5"), std::string::npos);
  first.close();
  ASSERT_TRUE(streams_become(0));
  Client third(port_);
  EXPECT_EQ(third.upgrade("/v1/stream?token=secret").rfind("HTTP/1.1 101", 0), 0u);
}

TEST_F(LiveStreamTest, HostileFramesCloseWithTheirCode) {
  start();
  const auto code_after = [&](const std::string& bytes) {
    Client client(port_);
    EXPECT_EQ(client.upgrade("/v1/stream?token=secret").rfind("HTTP/1.1 101", 0), 0u);
    client.send_raw(bytes);
    return client.close_code();
  };
  EXPECT_EQ(code_after(ws::encode_frame(ws::Opcode::kBinary, "abcd")), ws::kProtocolError);
  EXPECT_EQ(code_after(std::string("\x82\xff\x00\x00\x00\x00\x10\x00\x00\x00\x01\x02\x03\x04", 14)),
            ws::kMessageTooBig);
  std::string opcode = ws::encode_client_frame(ws::Opcode::kBinary, "abcd", kMask);
  opcode[0] = static_cast<char>(0x83);
  EXPECT_EQ(code_after(opcode), ws::kProtocolError);
  EXPECT_EQ(code_after(ws::encode_client_frame(ws::Opcode::kPing, "x", kMask, false)),
            ws::kProtocolError);
  EXPECT_EQ(code_after(ws::encode_client_frame(ws::Opcode::kBinary, "abc", kMask)),
            ws::kInvalidPayload);
  EXPECT_EQ(code_after(ws::encode_client_frame(ws::Opcode::kText, "hello", kMask)),
            ws::kUnsupportedData);
  EXPECT_TRUE(streams_become(0));
  EXPECT_EQ(Client(port_)
                .head("GET /v1/health HTTP/1.1\r\nHost: localhost\r\n\r\n")
                .rfind("HTTP/1.1 200", 0),
            0u);
}

TEST_F(LiveStreamTest, ClientLeavingMidStreamFreesTheStream) {
  start();
  for (int k = 0; k < 3; ++k) {
    Client client(port_);
    ASSERT_EQ(client.upgrade("/v1/stream?token=secret").rfind("HTTP/1.1 101", 0), 0u);
    client.send(ws::Opcode::kBinary, std::string(3200, '\0'));
    // Half a frame, then gone.
    client.send_raw(ws::encode_client_frame(ws::Opcode::kBinary, std::string(3200, '\0'), kMask)
                        .substr(0, 100));
  }
  EXPECT_TRUE(streams_become(0));
}

TEST_F(LiveStreamTest, StoppingTheServerClosesOpenStreams) {
  start();
  Client first(port_);
  Client second(port_);
  ASSERT_EQ(first.upgrade("/v1/stream?token=secret").rfind("HTTP/1.1 101", 0), 0u);
  ASSERT_EQ(second.upgrade("/v1/stream?token=secret").rfind("HTTP/1.1 101", 0), 0u);
  ASSERT_TRUE(streams_become(2));
  const auto stopped_at = Clock::now();
  api_->stop();
  // One client answers the close, the other does not.
  EXPECT_EQ(first.close_code(), ws::kGoingAway);
  first.send(ws::Opcode::kClose, std::string("\x03\xe9", 2));
  EXPECT_EQ(second.close_code(), ws::kGoingAway);
  serving_.join();
  EXPECT_LT(Clock::now() - stopped_at, std::chrono::seconds(4));
  EXPECT_EQ(metrics_.active_streams(), 0u);
}

// A stream whose every event is large, driven over a socket pair whose client never reads.
class LoudStream : public LiveStream {
 public:
  void push(std::string_view, Clock::time_point) override { ++pushes_; }
  std::vector<std::string> take_events() override {
    return std::vector<std::string>(std::exchange(pushes_, 0), std::string(64 * 1024, 'x'));
  }
  std::vector<std::string> finish() override { return {}; }

 private:
  std::size_t pushes_ = 0;
};

TEST(LiveSession, ClientThatDoesNotReadIsDropped) {
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
  LoudStream stream;
  LiveStreamRequest request;
  LiveSessionLimits limits;
  limits.max_send_bytes = 1 << 20;
  limits.read_seconds = 2.0;
  Metrics metrics;
  std::atomic<bool> ended = false;
  std::thread session([&] {
    run_live_session(
        pair[0], "", stream, request, limits, [] { return false; }, metrics);
    ended = true;
  });
  // Audio keeps coming; the answers are never read.
  const std::string frame = ws::encode_client_frame(ws::Opcode::kBinary, "abcd", kMask);
  const auto start = Clock::now();
  while (!ended && Clock::now() - start < std::chrono::seconds(10)) {
    ::send(pair[1], frame.data(), frame.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(ended);
  ::shutdown(pair[1], SHUT_RDWR);
  session.join();
  ::close(pair[0]);
  ::close(pair[1]);
}

// Records, for each push, how long its audio had waited by the session's account (the time of
// the push less the arrival it was given); each push takes `work`, as a stalled server would.
class ArrivalStream : public LiveStream {
 public:
  explicit ArrivalStream(Clock::duration work) : work_(work) {}
  void push(std::string_view, Clock::time_point arrival) override {
    waits_.push_back(std::chrono::duration<double>(Clock::now() - arrival).count());
    std::this_thread::sleep_for(work_);
  }
  std::vector<std::string> take_events() override { return {}; }
  std::vector<std::string> finish() override { return {}; }
  const std::vector<double>& waits() const { return waits_; }

 private:
  Clock::duration work_;
  std::vector<double> waits_;
};

// 100 ms messages of 16 kHz s16le sent by `pace` (each sent once `every` has passed since the
// last, `pause` before the `pause_at`-th), then a close; the waits the stream was told of.
std::vector<double> waits_of(Clock::duration work, Clock::duration every, std::size_t messages,
                             std::size_t pause_at = 0, Clock::duration pause = {}) {
  int pair[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
  ArrivalStream stream(work);
  LiveStreamRequest request;
  LiveSessionLimits limits;
  Metrics metrics;
  std::thread session([&] {
    run_live_session(
        pair[0], "", stream, request, limits, [] { return false; }, metrics);
  });
  const std::string message =
      ws::encode_client_frame(ws::Opcode::kBinary, std::string(3200, '\0'), kMask);
  auto next = Clock::now();
  for (std::size_t k = 0; k < messages; ++k) {
    if (k == pause_at && pause_at > 0) next += pause;
    std::this_thread::sleep_until(next);
    EXPECT_EQ(::send(pair[1], message.data(), message.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(message.size()));
    next += every;
  }
  const std::string close = ws::encode_client_frame(ws::Opcode::kClose, "\x03\xe8", kMask);
  ::send(pair[1], close.data(), close.size(), MSG_NOSIGNAL);
  session.join();
  ::close(pair[0]);
  ::close(pair[1]);
  return stream.waits();
}

// Audio sent faster than real time counts from when it is pushed: no wait, never a negative one.
TEST(LiveSessionArrival, FasterThanRealTimeShowsNoLag) {
  const std::vector<double> waits = waits_of(std::chrono::milliseconds(0), {}, 30);
  ASSERT_EQ(waits.size(), 30u);
  // (A loaded machine may hold the session's thread back a little: that is lag too.)
  for (const double wait : waits) {
    EXPECT_GE(wait, 0.0);
    EXPECT_LT(wait, 0.3);
  }
}

// A real-time client and a server three times slower than real time (each 100 ms message takes
// 300 ms): the audio's wait grows by about 0.2 s a message, and the latencies show it.
TEST(LiveSessionArrival, AServerFallingBehindShowsGrowingLag) {
  const std::vector<double> waits =
      waits_of(std::chrono::milliseconds(300), std::chrono::milliseconds(100), 10);
  ASSERT_EQ(waits.size(), 10u);
  for (std::size_t k = 1; k < waits.size(); ++k) EXPECT_GT(waits[k], waits[k - 1] + 0.05) << k;
  EXPECT_GT(waits.back(), 1.4);  // 9 x 0.2 s, less the scheduling's slack
}

// A real-time client that pauses: the pause is the client's, not a lag of the server's.
TEST(LiveSessionArrival, AClientsPauseIsNotLag) {
  const std::vector<double> waits =
      waits_of(std::chrono::milliseconds(0), std::chrono::milliseconds(100), 10, 5,
               std::chrono::milliseconds(1000));
  ASSERT_EQ(waits.size(), 10u);
  // (A loaded machine may hold the session's thread back a little: that is lag too.)
  for (const double wait : waits) {
    EXPECT_GE(wait, 0.0);
    EXPECT_LT(wait, 0.3);
  }
}

}  // namespace
}  // namespace parley::server
