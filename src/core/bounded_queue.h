#pragma once
// A first-in first-out hand-over between producer threads and consumer threads that holds at
// most `capacity` items, so a fast producer waits for a slow consumer instead of running ahead
// without bound. Either side can end the exchange: the producers close it once (normally, or
// with the exception that stopped them, which the consumers then receive), a consumer cancels
// it (every producer's next push returns false and it should stop).
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <utility>

#include "core/error.h"

namespace parley {

template <typename T>
class BoundedQueue {
 public:
  explicit BoundedQueue(std::size_t capacity) : capacity_(capacity) {
    if (capacity_ == 0) fail("BoundedQueue: capacity must be at least 1");
  }
  BoundedQueue(const BoundedQueue&) = delete;
  BoundedQueue& operator=(const BoundedQueue&) = delete;

  // Waits for room; false when the consumer cancelled (the item is dropped).
  bool push(T item) {
    std::unique_lock lock(mutex_);
    room_.wait(lock, [this] { return cancelled_ || items_.size() < capacity_; });
    if (cancelled_) return false;
    items_.push_back(std::move(item));
    ready_.notify_one();
    return true;
  }

  // No more items will come; `error`, when set, is rethrown by pop() once the queue is drained.
  void close(std::exception_ptr error = nullptr) {
    std::lock_guard lock(mutex_);
    closed_ = true;
    error_ = std::move(error);
    ready_.notify_all();
  }

  // The consumer stops taking items: wakes and fails every present and future push.
  void cancel() {
    std::lock_guard lock(mutex_);
    cancelled_ = true;
    items_.clear();
    room_.notify_all();
  }

  // The next item, waiting for one; nullopt once the queue is closed and empty. Rethrows the
  // producer's exception at that point if it closed with one.
  std::optional<T> pop() {
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [this] { return closed_ || !items_.empty(); });
    if (items_.empty()) {
      if (error_) std::rethrow_exception(error_);
      return std::nullopt;
    }
    T item = std::move(items_.front());
    items_.pop_front();
    room_.notify_one();
    return item;
  }

  // The next item if one is waiting now, else nullopt (also once closed and drained: call pop()
  // to tell the two apart).
  std::optional<T> try_pop() {
    std::lock_guard lock(mutex_);
    if (items_.empty()) return std::nullopt;
    T item = std::move(items_.front());
    items_.pop_front();
    room_.notify_one();
    return item;
  }

  std::size_t capacity() const { return capacity_; }

 private:
  const std::size_t capacity_;
  std::mutex mutex_;
  std::condition_variable room_;
  std::condition_variable ready_;
  std::deque<T> items_;
  bool closed_ = false;
  bool cancelled_ = false;
  std::exception_ptr error_;
};

}  // namespace parley
