#include "runtime/new_shape_gate.h"

#include <utility>

namespace parley::runtime {

std::shared_mutex& NewShapeGate::process_lock() {
  static std::shared_mutex lock;
  return lock;
}

std::unique_lock<std::shared_mutex> NewShapeGate::alone_in_process() {
  return std::unique_lock<std::shared_mutex>(process_lock());
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
    lock_.emplace<std::unique_lock<std::shared_mutex>>(process_lock());
  } else {
    lock_.emplace<std::shared_lock<std::shared_mutex>>(process_lock());
  }
}

NewShapeGate::Pass::~Pass() {
  if (succeeded_ && alone()) {
    std::lock_guard lock(gate_.seen_mutex_);
    gate_.seen_shapes_.insert(shape_key_);
  }
}

}  // namespace parley::runtime
