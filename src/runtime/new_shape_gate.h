#pragma once
// Keeps a GPU session's first run of an input shape apart from every other GPU run of the process.
//
// On its first run of a shape, ONNX Runtime's CUDA provider has cuDNN choose its kernels (the
// exhaustive algorithm search), and cuDNN may capture the stream while it does. A capture in
// CUDA's global mode fails when any other thread of the process makes an unsafe call meanwhile
// (a cudaMalloc, a synchronising copy), which another engine's session does all the time. With
// several engines in one process this failed a convolution with error 901 ("operation failed
// due to a previous error during capture") in about one GPU run in six. A new shape therefore
// runs alone; runs of shapes a session has already seen proceed side by side, as before. With
// static shapes (runtime/shape_plan.h) a session sees one or two shapes, so only the first runs
// of each session wait. "Alone" means apart from the whole process unless the gate names a
// device whose threads are isolated from other threads' captures (runtime/stream_capture.h):
// then apart from the runs on that device only, and the other GPUs go on.
#include <condition_variable>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <variant>

namespace parley::runtime {

// A readers-writer lock that lets a waiting writer in before readers that come after it.
// std::shared_mutex (glibc's rwlock) prefers readers: with a dozen sessions of several engines
// running back to back there is hardly a moment without a reader, and a new shape's run waited
// for seconds while its engine stood still (docs/corpus.md has the corpus figures with the gate).
class WriterFirstLock {
 public:
  void lock();
  void unlock();
  void lock_shared();
  void unlock_shared();

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int readers_ = 0;
  int writers_waiting_ = 0;
  bool writer_ = false;
};

class NewShapeGate {
 public:
  // Held for one run: alone for a new shape, shared otherwise. Releasing it after a successful
  // run marks the shape seen.
  class Pass {
   public:
    Pass(Pass&&) = default;
    Pass& operator=(Pass&&) = delete;
    ~Pass();
    bool alone() const { return std::holds_alternative<std::unique_lock<WriterFirstLock>>(lock_); }
    // The run went through: later runs of this shape need not run alone.
    void succeeded() { succeeded_ = true; }

   private:
    friend class NewShapeGate;
    Pass(NewShapeGate& gate, std::string shape_key, bool alone);

    NewShapeGate& gate_;
    std::string shape_key_;
    std::variant<std::shared_lock<WriterFirstLock>, std::unique_lock<WriterFirstLock>> lock_;
    bool succeeded_ = false;
  };

  // `device` (e.g. "cuda:1"), where the threads that run sessions are thread-local to stream
  // capture (OnnxSession decides): new shapes wait only for that device's runs. Empty: for
  // the whole process's.
  explicit NewShapeGate(std::string device = {});

  // Waits until this run may go: `shape_key` names the run's input shapes.
  Pass enter(const std::string& shape_key);
  bool seen(const std::string& shape_key) const;
  const std::string& device() const { return device_; }

  // Held while a GPU session for `device` (as above) is created: creating one allocates device
  // memory, which is as unsafe during another session's capture as a run is. Only a new shape's
  // run captures, so a creation waits for those alone and goes beside runs of seen shapes and
  // other creations (which allocate too): the engines of several GPUs load their models at once.
  static std::shared_lock<WriterFirstLock> while_creating_session(const std::string& device = {});

 private:
  // One lock per device, and one ("") for the whole process; never freed, so references stay.
  static WriterFirstLock& lock_of(const std::string& device);

  std::string device_;
  WriterFirstLock& device_lock_;
  mutable std::mutex seen_mutex_;
  std::set<std::string> seen_shapes_;
};

}  // namespace parley::runtime
