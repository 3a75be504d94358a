#include "runtime/new_shape_gate.h"

#include <map>
#include <utility>

#include "runtime/stream_capture.h"

namespace parley::runtime {

void WriterFirstLock::lock() {
  std::unique_lock guard(mutex_);
  ++writers_waiting_;
  changed_.wait(guard, [this] { return !writer_ && readers_ == 0; });
  --writers_waiting_;
  writer_ = true;
}

void WriterFirstLock::unlock() {
  {
    std::lock_guard guard(mutex_);
    writer_ = false;
  }
  changed_.notify_all();
}

void WriterFirstLock::lock_shared() {
  std::unique_lock guard(mutex_);
  changed_.wait(guard, [this] { return !writer_ && writers_waiting_ == 0; });
  ++readers_;
}

void WriterFirstLock::unlock_shared() {
  bool last = false;
  {
    std::lock_guard guard(mutex_);
    last = --readers_ == 0;
  }
  if (last) changed_.notify_all();
}

WriterFirstLock& NewShapeGate::lock_of(const std::string& device) {
  static std::mutex mutex;
  static std::map<std::string, WriterFirstLock> locks;
  std::lock_guard guard(mutex);
  return locks.try_emplace(device).first->second;
}

NewShapeGate::NewShapeGate(std::string device)
    : device_(std::move(device)), device_lock_(lock_of(device_)) {}

std::shared_lock<WriterFirstLock> NewShapeGate::while_creating_session(const std::string& device) {
  if (!device.empty()) isolate_stream_capture_of_this_thread();
  return std::shared_lock<WriterFirstLock>(lock_of(device));
}

bool NewShapeGate::seen(const std::string& shape_key) const {
  std::lock_guard lock(seen_mutex_);
  return seen_shapes_.contains(shape_key);
}

NewShapeGate::Pass NewShapeGate::enter(const std::string& shape_key) {
  if (!device_.empty()) isolate_stream_capture_of_this_thread();
  return Pass(*this, shape_key, !seen(shape_key));
}

NewShapeGate::Pass::Pass(NewShapeGate& gate, std::string shape_key, bool alone)
    : gate_(gate), shape_key_(std::move(shape_key)) {
  if (alone) {
    lock_.emplace<std::unique_lock<WriterFirstLock>>(gate_.device_lock_);
    // A session run by several threads: another may have run this shape while this one waited.
    if (gate_.seen(shape_key_)) {
      lock_.emplace<std::shared_lock<WriterFirstLock>>(gate_.device_lock_);
    }
  } else {
    lock_.emplace<std::shared_lock<WriterFirstLock>>(gate_.device_lock_);
  }
}

NewShapeGate::Pass::~Pass() {
  if (succeeded_ && alone()) {
    std::lock_guard lock(gate_.seen_mutex_);
    gate_.seen_shapes_.insert(shape_key_);
  }
}

}  // namespace parley::runtime
