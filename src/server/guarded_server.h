#pragma once
// The HTTP server's connections, guarded against slow, idle and greedy clients: cpp-httplib's
// server with its own connection loop. Each connection has a thread of its own (up to
// max_connections; beyond them, or beyond max_client_connections from one address, a connection
// is answered only for /v1/health, 503 otherwise), and deadlines per phase: the request line and
// headers must arrive within header_seconds of their first byte (and within header_bytes), a
// body may pause at most read_seconds between bytes, a client must take the answer with pauses
// no longer than read_seconds, and an idle connection is closed after idle_seconds. Request
// bodies are read by at most body_slots requests at once (each may hold an upload in memory).
//
// The handlers steer the connection they run on through the static functions below; without one
// (the HTTP fuzzer drives process_request on a stream of its own) they do nothing.
#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <string>

namespace parley::server {

struct ConnectionLimits {
  std::size_t max_connections = 64;
  std::size_t max_client_connections = 32;
  std::size_t body_slots = 8;
  double header_seconds = 10.0;
  double read_seconds = 30.0;
  double idle_seconds = 5.0;
  std::size_t header_bytes = 64 * 1024;
  std::size_t requests_per_connection = 100;
};

class GuardedServer : public httplib::Server {
 public:
  explicit GuardedServer(ConnectionLimits limits);
  ~GuardedServer() override;

  // The connection's request line and headers are read: from now on its reads wait at most
  // read_seconds each.
  static void reading_body();
  // The request's body (or the rest of it) stays unread: the connection closes after the answer.
  static void close_after_answer();
  // True when the connection is over the server's or its client's limit: only /v1/health is
  // answered on it.
  static bool limited();
  // Waits (at most read_seconds) for one of the body_slots, held until the request is answered or
  // release_body_slot(). False when none came in time (true without a connection).
  static bool take_body_slot();
  static void release_body_slot();

  // What an upgraded connection runs on its thread: its socket, the bytes already read past the
  // request, and a test that turns true once the server stops (the session then ends promptly).
  using UpgradedSession =
      std::function<void(socket_t sock, std::string buffered, const std::function<bool()>& stop)>;
  // The handler accepts a protocol upgrade (RFC 9110 section 7.8, a WebSocket): httplib's answer
  // is dropped, `handshake` (the whole 101 answer, headers and blank line) is written instead,
  // and the connection leaves HTTP for `session`. Without a connection it does nothing.
  static void upgrade(std::string handshake, UpgradedSession session);

 private:
  bool process_and_close_socket(socket_t sock) override;
  void serve_connection(socket_t sock, bool overflow);

  ConnectionLimits limits_;
  std::mutex mutex_;
  std::condition_variable slot_freed_;
  std::size_t bodies_reading_ = 0;
  std::map<std::string, std::size_t> connections_by_client_;
};

}  // namespace parley::server
