#include "server/live_session.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <exception>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "server/websocket.h"

namespace parley::server {

std::size_t LiveStreamRequest::bytes_per_frame() const {
  return static_cast<std::size_t>(channels) * (format == PcmFormat::kS16le ? 2 : 4);
}

namespace {

using Clock = std::chrono::steady_clock;
namespace ws = websocket;

Clock::duration seconds(double value) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(value));
}

// The session's state between the socket and the stream.
class Session {
 public:
  Session(int sock, LiveStream& stream, const LiveStreamRequest& request,
          const LiveSessionLimits& limits, Metrics& metrics)
      : sock_(sock),
        stream_(stream),
        request_(request),
        limits_(limits),
        metrics_(metrics),
        reader_(limits.max_message_bytes) {}

  void run(std::string buffered, const std::function<bool()>& stopping) {
    last_received_ = last_sent_ = anchor_ = Clock::now();
    if (!buffered.empty()) receive(buffered);
    std::array<char, 16 * 1024> buffer{};
    while (!dropped_) {
      if (stopping() && !close_sent_) close(ws::kGoingAway, "the server is stopping");
      const auto now = Clock::now();
      if (close_sent_ && out_.empty() && (close_received_ || now > close_deadline_)) break;
      if (!out_.empty() && now - last_sent_ > seconds(limits_.read_seconds)) {
        return drop("the client does not take what the server sends");
      }
      if (!close_sent_ && now - last_received_ > seconds(limits_.read_seconds)) {
        close(ws::kPolicyViolation, "nothing received for too long");
      }
      pollfd entry{sock_, static_cast<short>(POLLIN | (out_.empty() ? 0 : POLLOUT)), 0};
      // Bytes already there when the session asks are a backlog: they arrived while it worked
      // (or the client sends faster than real time). Else it waits for them (arrival()).
      int ready = ::poll(&entry, 1, 0);
      backlog_ = ready > 0 && (entry.revents & POLLIN) != 0;
      if (!backlog_ && ready >= 0) ready = ::poll(&entry, 1, 100);
      if (ready < 0 && errno != EINTR) return drop("poll failed");
      if (ready <= 0) continue;
      if ((entry.revents & POLLOUT) != 0) send_some();
      if ((entry.revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
        const ssize_t count = ::recv(sock_, buffer.data(), buffer.size(), MSG_DONTWAIT);
        if (count < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (count <= 0) return drop("the client went away");
        last_received_ = Clock::now();
        receive(std::string_view(buffer.data(), static_cast<std::size_t>(count)));
      }
    }
    // What is still queued (the close frame at least) goes out if the client takes it at once.
    while (!dropped_ && !out_.empty() && send_some()) {
    }
  }

 private:
  void receive(std::string_view bytes) {
    while (!bytes.empty() && !dropped_) {
      if (reader_.error()) return;  // after the error's close, what comes is dropped
      const std::size_t used = reader_.feed(bytes);
      bytes.remove_prefix(used);
      if (auto message = reader_.take()) handle(*message);
      if (const auto& error = reader_.error()) {
        spdlog::info("live stream: {}", error->reason);
        if (!close_sent_) close(error->code, error->reason);
        close_received_ = true;  // no close frame will be parsed: do not wait for one
        return;
      }
    }
  }

  void handle(const ws::Message& message) {
    switch (message.opcode) {
      case ws::Opcode::kPing:
        if (!close_sent_) queue(ws::encode_frame(ws::Opcode::kPong, message.payload));
        return;
      case ws::Opcode::kPong:
        return;
      case ws::Opcode::kClose:
        close_received_ = true;
        // The client ends the stream: its last events and result first, then the close.
        if (!close_sent_) finish(ws::kNormal);
        return;
      case ws::Opcode::kBinary:
        if (!close_sent_) push(message.payload);
        return;
      case ws::Opcode::kText:
        if (!close_sent_) command(message.payload);
        return;
      case ws::Opcode::kContinuation:
        return;
    }
  }

  void push(const std::string& pcm) {
    if (pcm.size() % request_.bytes_per_frame() != 0) {
      return close(ws::kInvalidPayload,
                   fmt::format("a binary message must hold whole frames of {} bytes (the "
                               "format's sample size times the channels)",
                               request_.bytes_per_frame()));
    }
    const Clock::time_point arrived = arrival(pcm.size() / request_.bytes_per_frame());
    if (!guarded([&] {
          stream_.push(pcm, arrived);
          send_events(stream_.take_events());
        })) {
      return;
    }
    metrics_.add_streamed_audio(static_cast<double>(pcm.size() / request_.bytes_per_frame()) /
                                request_.sample_rate);
  }

  // When a message's audio arrived, for its events' latencies, taking the client for a real-time
  // source: the stream's start (anchor_) plus the audio received so far, where that is earlier
  // than now. Audio that waited on the server (in the socket while an earlier message was being
  // diarized) thus counts from when it was captured, and a server that falls behind shows it in
  // every latency; audio sent faster than real time counts from now, never from the future. A
  // message the session had to wait for shows that the server was not behind: if it came later
  // than the real-time pace (a client that paused, or a network delay), the pause is the client's,
  // and the start moves by it.
  Clock::time_point arrival(std::size_t frames) {
    const Clock::time_point now = Clock::now();
    received_frames_ += frames;
    const auto received = seconds(static_cast<double>(received_frames_) / request_.sample_rate);
    if (!backlog_ && anchor_ + received < now) anchor_ = now - received;
    // The rest of the bytes already read waited while this message was diarized.
    backlog_ = true;
    return std::min(now, anchor_ + received);
  }

  void command(const std::string& text) {
    const nlohmann::json message = nlohmann::json::parse(text, nullptr, false);
    if (message.is_object() && message.value("type", std::string()) == "finish") {
      return finish(ws::kNormal);
    }
    close(ws::kUnsupportedData, R"(the only text message taken is {"type":"finish"})");
  }

  void finish(std::uint16_t code) {
    if (guarded([&] { send_events(stream_.finish()); })) close(code, "");
  }

  // Runs a call into the stream; its failure closes the session (1007 for what the client sent
  // or asked, 1011 for the server's own failure).
  template <typename Call>
  bool guarded(Call call) {
    try {
      call();
      return true;
    } catch (const Error& error) {
      close(ws::kInvalidPayload, error.what());
    } catch (const std::exception& error) {
      spdlog::error("live stream failed: {}", error.what());
      close(ws::kInternalError, "the stream failed (the server's log says why)");
    }
    return false;
  }

  void send_events(const std::vector<std::string>& events) {
    for (const std::string& event : events) queue(ws::encode_frame(ws::Opcode::kText, event));
  }

  void close(std::uint16_t code, std::string_view reason) {
    if (close_sent_) return;
    queue(ws::encode_close(code, reason));
    close_sent_ = true;
    close_deadline_ = Clock::now() + seconds(limits_.close_seconds);
  }

  void queue(std::string frame) {
    if (dropped_) return;
    if (out_.size() + frame.size() > limits_.max_send_bytes) {
      return drop("the client does not take what the server sends");
    }
    if (out_.empty()) last_sent_ = Clock::now();
    out_ += frame;
    send_some();
  }

  // Sends what the socket takes now; false when it took nothing.
  bool send_some() {
    if (out_.empty() || dropped_) return false;
    const ssize_t count = ::send(sock_, out_.data(), out_.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (count < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) drop("the client went away");
      return false;
    }
    out_.erase(0, static_cast<std::size_t>(count));
    last_sent_ = Clock::now();
    return count > 0;
  }

  void drop(std::string_view why) {
    if (!dropped_) spdlog::info("live stream dropped: {}", why);
    dropped_ = true;
  }

  int sock_;
  LiveStream& stream_;
  const LiveStreamRequest& request_;
  const LiveSessionLimits& limits_;
  Metrics& metrics_;
  ws::MessageReader reader_;
  std::string out_;
  Clock::time_point last_received_;
  Clock::time_point last_sent_;
  Clock::time_point close_deadline_;
  Clock::time_point anchor_;  // when the stream's first sample was captured, at the latest
  std::uint64_t received_frames_ = 0;
  bool backlog_ = false;  // the bytes being handled were there before the session asked
  bool close_sent_ = false;
  bool close_received_ = false;
  bool dropped_ = false;
};

}  // namespace

void run_live_session(int sock, std::string buffered, LiveStream& stream,
                      const LiveStreamRequest& request, const LiveSessionLimits& limits,
                      const std::function<bool()>& stopping, Metrics& metrics) {
  try {
    Session(sock, stream, request, limits, metrics).run(std::move(buffered), stopping);
  } catch (const std::exception& error) {
    spdlog::error("live stream failed: {}", error.what());
  }
}

}  // namespace parley::server
