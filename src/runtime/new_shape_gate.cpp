#include "runtime/new_shape_gate.h"

#include <utility>

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

WriterFirstLock& NewShapeGate::process_lock() {
  static WriterFirstLock lock;
  return lock;
}

std::shared_lock<WriterFirstLock> NewShapeGate::while_creating_session() {
  return std::shared_lock<WriterFirstLock>(process_lock());
}

bool NewShapeGate::seen(const std::string& shape_key) const {
  std::lock_guard lock(seen_mutex_);
  return seen_shapes_.contains(shape_key);
}

NewShapeGate::Pass NewShapeGate::enter(const std::string& shape_key) {
  return Pass(*this, shape_key, !seen(shape_key));
}

NewShapeGate::Pass::Pass(NewShapeGate& gate, std::string shape_key, bool alone)
    : gate_(gate), shape_key_(std::move(shape_key)) {
  if (alone) {
    lock_.emplace<std::unique_lock<WriterFirstLock>>(process_lock());
    // A session run by several threads: another may have run this shape while this one waited.
    if (gate_.seen(shape_key_)) {
      lock_.emplace<std::shared_lock<WriterFirstLock>>(process_lock());
    }
  } else {
    lock_.emplace<std::shared_lock<WriterFirstLock>>(process_lock());
  }
}

NewShapeGate::Pass::~Pass() {
  if (succeeded_ && alone()) {
    std::lock_guard lock(gate_.seen_mutex_);
    gate_.seen_shapes_.insert(shape_key_);
  }
}

}  // namespace parley::runtime
