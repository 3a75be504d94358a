#pragma once
// One live stream over a WebSocket (`GET /v1/stream`, docs/serve.md): binary messages carry PCM
// into a stream diarizer, its events go back as text messages (one JSON event each), and the
// text message {"type":"finish"} or the client's close frame ends the stream with the last
// events and the result. The session runs on its connection's thread and never holds more than
// one message from the client and max_send_bytes of answers: a client that stops reading what
// the server sends is dropped instead of filling memory or holding the stream.
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/metrics.h"

namespace parley::server {

// The sample formats a client may send.
enum class PcmFormat { kS16le, kF32le };

// The query parameters of /v1/stream: the audio's shape (the transport needs it to count
// seconds and whole samples), and the stream diarizer's settings as the client named them.
struct LiveStreamRequest {
  double sample_rate = 16000.0;
  PcmFormat format = PcmFormat::kS16le;
  int channels = 1;
  // The stream's other options (stream/stream_options.h: step, latency, provisional, ...) by the
  // names the client gave, checked by the stream's option table.
  std::map<std::string, std::string> settings;

  std::size_t bytes_per_frame() const;  // one sample of every channel
};

// A stream diarizer as the session drives it. Each call may throw parley::Error (bad audio or
// settings: the message goes to the client); events are JSON objects, one text each.
class LiveStream {
 public:
  virtual ~LiveStream() = default;
  // PCM of the request's format, a whole number of frames, which arrived at `arrival` (the
  // events' latencies count from it): when the audio would have been captured by a real-time
  // source, for audio that waited on the server (run_live_session says how it is told).
  virtual void push(std::string_view pcm, std::chrono::steady_clock::time_point arrival) = 0;
  // Events that became ready since the last call.
  virtual std::vector<std::string> take_events() = 0;
  // End of audio: the last events, then {"type":"result", ...} with the stream's result.
  virtual std::vector<std::string> finish() = 0;
};

// Makes the stream a request asks for; throws parley::Error for settings it refuses.
using LiveStreamFactory = std::function<std::unique_ptr<LiveStream>(const LiveStreamRequest&)>;

struct LiveSessionLimits {
  std::size_t max_message_bytes = std::size_t{1} << 20;  // one client message (about 30 s of audio)
  std::size_t max_send_bytes = std::size_t{4} << 20;     // answers the client has not yet taken
  // The client must take answers with pauses no longer than this, and send something (audio,
  // a ping) at least this often.
  double read_seconds = 30.0;
  // After the server's close frame, how long the client's is waited for.
  double close_seconds = 2.0;
};

// Runs the session on `sock` (an upgraded connection) until it ends; `buffered` is what was read
// past the upgrade request, `stopping` turns true when the server stops (the client then gets a
// close frame with code 1001 at once). Never throws; the caller closes the socket.
void run_live_session(int sock, std::string buffered, LiveStream& stream,
                      const LiveStreamRequest& request, const LiveSessionLimits& limits,
                      const std::function<bool()>& stopping, Metrics& metrics);

}  // namespace parley::server
