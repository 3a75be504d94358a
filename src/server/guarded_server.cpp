#include "server/guarded_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

namespace parley::server {
namespace {

using Clock = std::chrono::steady_clock;

// What the handlers may change about the connection they run on.
struct Connection {
  GuardedServer* server = nullptr;
  const ConnectionLimits* limits = nullptr;
  bool reading_body = false;
  Clock::time_point header_deadline;
  std::size_t header_bytes = 0;
  bool close = false;
  bool limited = false;
  bool holds_slot = false;
  // Set by upgrade(): httplib's answer is dropped, and these take the connection over.
  std::string upgrade_handshake;
  GuardedServer::UpgradedSession upgraded;
};
thread_local Connection* current_connection = nullptr;

// How the connection pool hands a connection over: served, served for /v1/health only (the
// pool's threads are all taken), or closed at once (even the overflow is full).
enum class Admission { kServe, kOverflow, kDrop };
thread_local Admission current_admission = Admission::kServe;

Clock::duration seconds(double value) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(value));
}

// Waits until the socket is ready for `events` or `deadline` passes.
bool wait_until(socket_t sock, short events, Clock::time_point deadline) {
  while (true) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd entry{sock, events, 0};
    const int ready = ::poll(&entry, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (ready > 0) return true;
    if (ready < 0 && errno != EINTR) return false;
  }
}

std::string address_text(const sockaddr_storage& address) {
  std::array<char, INET6_ADDRSTRLEN> text{};
  if (address.ss_family == AF_INET) {
    const auto& ipv4 = reinterpret_cast<const sockaddr_in&>(address);
    ::inet_ntop(AF_INET, &ipv4.sin_addr, text.data(), text.size());
  } else if (address.ss_family == AF_INET6) {
    const auto& ipv6 = reinterpret_cast<const sockaddr_in6&>(address);
    ::inet_ntop(AF_INET6, &ipv6.sin6_addr, text.data(), text.size());
  }
  return text.data();
}

int address_port(const sockaddr_storage& address) {
  if (address.ss_family == AF_INET) {
    return ntohs(reinterpret_cast<const sockaddr_in&>(address).sin_port);
  }
  if (address.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6&>(address).sin6_port);
  }
  return 0;
}

void peer_address(socket_t sock, bool remote, std::string& ip, int& port) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  const int status = remote ? ::getpeername(sock, reinterpret_cast<sockaddr*>(&address), &length)
                            : ::getsockname(sock, reinterpret_cast<sockaddr*>(&address), &length);
  if (status != 0) {
    ip.clear();
    port = 0;
    return;
  }
  ip = address_text(address);
  port = address_port(address);
}

// A connection's socket with the deadlines of the phase it is in (see guarded_server.h).
class DeadlineStream : public httplib::Stream {
 public:
  DeadlineStream(socket_t sock, Connection& connection) : sock_(sock), connection_(connection) {}

  bool is_readable() const override {
    return begin_ < end_ || wait_until(sock_, POLLIN, read_deadline());
  }
  bool is_writable() const override {
    return wait_until(sock_, POLLOUT, Clock::now() + seconds(connection_.limits->read_seconds));
  }

  ssize_t read(char* out, std::size_t size) override {
    if (begin_ == end_) {
      if (!wait_until(sock_, POLLIN, read_deadline())) return -1;
      ssize_t count = 0;
      do {
        count = ::recv(sock_, buffer_.data(), buffer_.size(), 0);
      } while (count < 0 && errno == EINTR);
      if (count <= 0) return count;
      if (!connection_.reading_body) {
        connection_.header_bytes += static_cast<std::size_t>(count);
        if (connection_.header_bytes > connection_.limits->header_bytes) return -1;
      }
      begin_ = 0;
      end_ = static_cast<std::size_t>(count);
    }
    const std::size_t taken = std::min(size, end_ - begin_);
    std::memcpy(out, buffer_.data() + begin_, taken);
    begin_ += taken;
    return static_cast<ssize_t>(taken);
  }

  ssize_t write(const char* bytes, std::size_t size) override {
    if (connection_.upgraded) return static_cast<ssize_t>(size);
    const auto deadline = Clock::now() + seconds(connection_.limits->read_seconds);
    while (true) {
      if (!wait_until(sock_, POLLOUT, deadline)) return -1;
      const ssize_t count = ::send(sock_, bytes, size, MSG_NOSIGNAL);
      if (count >= 0 || (errno != EINTR && errno != EAGAIN)) return count;
    }
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    peer_address(sock_, true, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    peer_address(sock_, false, ip, port);
  }
  socket_t socket() const override { return sock_; }

  // Bytes already read from the socket and not yet parsed (the next request's start).
  bool has_buffered() const { return begin_ < end_; }
  std::string take_buffered() {
    std::string bytes(buffer_.data() + begin_, end_ - begin_);
    begin_ = end_ = 0;
    return bytes;
  }

 private:
  Clock::time_point read_deadline() const {
    return connection_.reading_body ? Clock::now() + seconds(connection_.limits->read_seconds)
                                    : connection_.header_deadline;
  }

  socket_t sock_;
  Connection& connection_;
  std::array<char, 16 * 1024> buffer_{};
  std::size_t begin_ = 0;
  std::size_t end_ = 0;
};

// A thread per connection, up to `threads`; beyond them a few overflow threads answer a bounded
// number of connections for /v1/health (and 503 otherwise), and the rest are closed at once.
class ConnectionPool : public httplib::TaskQueue {
 public:
  explicit ConnectionPool(std::size_t threads) : threads_(threads) {
    for (std::size_t k = 0; k < threads; ++k) workers_.emplace_back([this] { work(); });
    for (std::size_t k = 0; k < kOverflowThreads; ++k) {
      overflow_threads_.emplace_back([this] { overflow(); });
    }
  }
  ~ConnectionPool() override { shutdown(); }
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;

  void enqueue(std::function<void()> task) override {
    {
      const std::lock_guard lock(mutex_);
      // Counted by connections held, not by workers idle at this instant: a worker that has just
      // closed its connection is not yet waiting, and counting it busy would send a connection to
      // overflow while a worker is free for the next one.
      if (serving_ < threads_) {
        ++serving_;
        tasks_.push_back(std::move(task));
        task_ready_.notify_one();
        return;
      }
      overflow_tasks_.emplace_back(std::move(task), overflow_tasks_.size() >= kOverflowQueue);
    }
    overflow_ready_.notify_one();
  }

  void shutdown() override {
    {
      const std::lock_guard lock(mutex_);
      if (shut_down_) return;
      shut_down_ = true;
    }
    task_ready_.notify_all();
    overflow_ready_.notify_all();
    for (auto& worker : workers_) worker.join();
    for (auto& thread : overflow_threads_) thread.join();
  }

 private:
  static constexpr std::size_t kOverflowThreads = 4;
  static constexpr std::size_t kOverflowQueue = 16;

  void work() {
    std::unique_lock lock(mutex_);
    while (true) {
      task_ready_.wait(lock, [this] { return shut_down_ || !tasks_.empty(); });
      if (tasks_.empty()) return;
      auto task = std::move(tasks_.front());
      tasks_.pop_front();
      lock.unlock();
      current_admission = Admission::kServe;
      task();
      lock.lock();
      --serving_;
    }
  }

  void overflow() {
    std::unique_lock lock(mutex_);
    while (true) {
      overflow_ready_.wait(lock, [this] { return shut_down_ || !overflow_tasks_.empty(); });
      if (overflow_tasks_.empty()) return;
      auto [task, drop] = std::move(overflow_tasks_.front());
      overflow_tasks_.pop_front();
      lock.unlock();
      current_admission = drop ? Admission::kDrop : Admission::kOverflow;
      task();
      current_admission = Admission::kServe;
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable task_ready_;
  std::condition_variable overflow_ready_;
  std::deque<std::function<void()>> tasks_;
  std::deque<std::pair<std::function<void()>, bool>> overflow_tasks_;
  const std::size_t threads_;
  // Connections given to the workers and not yet closed (queued or being served).
  std::size_t serving_ = 0;
  bool shut_down_ = false;
  std::vector<std::thread> workers_;
  std::vector<std::thread> overflow_threads_;
};

}  // namespace

GuardedServer::GuardedServer(ConnectionLimits limits) : limits_(limits) {
  const std::size_t threads = std::max<std::size_t>(limits_.max_connections, 1);
  new_task_queue = [threads] { return new ConnectionPool(threads); };
}

GuardedServer::~GuardedServer() = default;

void GuardedServer::reading_body() {
  if (current_connection != nullptr) current_connection->reading_body = true;
}

void GuardedServer::close_after_answer() {
  if (current_connection != nullptr) current_connection->close = true;
}

bool GuardedServer::limited() {
  return current_connection != nullptr && current_connection->limited;
}

bool GuardedServer::take_body_slot() {
  Connection* connection = current_connection;
  if (connection == nullptr || connection->holds_slot) return true;
  GuardedServer& server = *connection->server;
  std::unique_lock lock(server.mutex_);
  if (!server.slot_freed_.wait_for(lock, seconds(server.limits_.read_seconds), [&] {
        return server.bodies_reading_ < server.limits_.body_slots;
      })) {
    return false;
  }
  ++server.bodies_reading_;
  connection->holds_slot = true;
  return true;
}

void GuardedServer::release_body_slot() {
  Connection* connection = current_connection;
  if (connection == nullptr || !connection->holds_slot) return;
  GuardedServer& server = *connection->server;
  {
    const std::lock_guard lock(server.mutex_);
    --server.bodies_reading_;
  }
  connection->holds_slot = false;
  server.slot_freed_.notify_one();
}

void GuardedServer::upgrade(std::string handshake, UpgradedSession session) {
  if (current_connection == nullptr) return;
  current_connection->upgrade_handshake = std::move(handshake);
  current_connection->upgraded = std::move(session);
}

bool GuardedServer::process_and_close_socket(socket_t sock) {
  const Admission admission = current_admission;
  if (admission != Admission::kDrop) serve_connection(sock, admission == Admission::kOverflow);
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return true;
}

void GuardedServer::serve_connection(socket_t sock, bool overflow) {
  Connection connection;
  connection.server = this;
  connection.limits = &limits_;
  std::string client;
  int port = 0;
  peer_address(sock, true, client, port);
  bool counted = false;
  if (overflow) {
    connection.limited = true;
  } else {
    const std::lock_guard lock(mutex_);
    std::size_t& open = connections_by_client_[client];
    if (open >= limits_.max_client_connections) {
      connection.limited = true;
    } else {
      ++open;
      counted = true;
    }
  }
  // A limited connection gets one request, and little time for it.
  const double header_seconds =
      connection.limited ? std::min(limits_.header_seconds, 1.0) : limits_.header_seconds;
  const std::size_t requests = connection.limited ? 1 : limits_.requests_per_connection;

  current_connection = &connection;
  DeadlineStream stream(sock, connection);
  for (std::size_t k = 0; k < requests; ++k) {
    // The first request may take header_seconds to start, a later one idle_seconds; stopping
    // the server ends the wait.
    const auto wait_deadline =
        Clock::now() + seconds(k == 0 ? header_seconds : limits_.idle_seconds);
    bool ready = stream.has_buffered();
    while (!ready && svr_sock_ != INVALID_SOCKET && Clock::now() < wait_deadline) {
      ready = wait_until(sock, POLLIN, std::min(wait_deadline, Clock::now() + seconds(0.1)));
    }
    if (!ready) break;
    connection.reading_body = false;
    connection.header_deadline = Clock::now() + seconds(header_seconds);
    connection.header_bytes = 0;
    connection.close = false;
    bool connection_closed = false;
    const bool answered = process_request(stream, k + 1 == requests || svr_sock_ == INVALID_SOCKET,
                                          connection_closed, nullptr);
    release_body_slot();
    if (connection.upgraded) {
      const auto session = std::move(connection.upgraded);
      connection.upgraded = nullptr;
      const std::string& handshake = connection.upgrade_handshake;
      if (answered && stream.write(handshake.data(), handshake.size()) ==
                          static_cast<ssize_t>(handshake.size())) {
        session(sock, stream.take_buffered(), [this] { return svr_sock_ == INVALID_SOCKET; });
      }
      break;
    }
    if (connection.close) {
      // What the client still sends is read and dropped while it keeps coming (pauses under a
      // second, 10 s and 64 MiB at most), so that a client that sends its whole body before it
      // reads sees the answer instead of a reset connection.
      ::shutdown(sock, SHUT_WR);
      const auto linger_end = Clock::now() + seconds(10.0);
      std::array<char, 16 * 1024> discard{};
      std::size_t discarded = 0;
      while (discarded < (std::size_t{64} << 20) && Clock::now() < linger_end &&
             wait_until(sock, POLLIN, std::min(linger_end, Clock::now() + seconds(1.0)))) {
        const ssize_t count = ::recv(sock, discard.data(), discard.size(), 0);
        if (count <= 0) break;
        discarded += static_cast<std::size_t>(count);
      }
      break;
    }
    if (!answered || connection_closed) break;
  }
  current_connection = nullptr;
  if (counted) {
    const std::lock_guard lock(mutex_);
    if (--connections_by_client_[client] == 0) connections_by_client_.erase(client);
  }
}

}  // namespace parley::server
