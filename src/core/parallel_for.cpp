#include "core/parallel_for.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace parley {
namespace {

thread_local bool on_pool_worker = false;

// Threads kept for the life of the process: parallel_for runs thousands of times per recording
// (every embedding batch), and starting threads per call costs more than the work on some
// machines.
class WorkerPool {
 public:
  static WorkerPool& instance() {
    static WorkerPool pool;
    return pool;
  }
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;
  ~WorkerPool() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    work_ready_.notify_all();
    workers_.clear();  // joins
  }

  // Runs every task, tasks[0] on the calling thread, the others on pool threads, and returns
  // when all have finished. Tasks must not throw.
  void run_all(std::vector<std::function<void()>>& tasks) {
    struct Completion {
      std::mutex mutex;
      std::condition_variable done;
      std::size_t remaining = 0;
    } completion;
    completion.remaining = tasks.size() - 1;
    {
      std::lock_guard lock(mutex_);
      while (workers_.size() < tasks.size() - 1) {
        workers_.emplace_back([this] { work(); });
      }
      for (std::size_t t = 1; t < tasks.size(); ++t) {
        queue_.emplace_back([&completion, &task = tasks[t]] {
          task();
          std::lock_guard done_lock(completion.mutex);
          if (--completion.remaining == 0) completion.done.notify_one();
        });
      }
    }
    work_ready_.notify_all();
    tasks[0]();
    std::unique_lock lock(completion.mutex);
    completion.done.wait(lock, [&completion] { return completion.remaining == 0; });
  }

 private:
  WorkerPool() = default;

  void work() {
    on_pool_worker = true;
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock lock(mutex_);
        work_ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();
    }
  }

  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::jthread> workers_;
};

}  // namespace

void parallel_for(std::size_t count, int threads, const std::function<void(std::size_t)>& body) {
  const std::size_t workers = std::min(count, static_cast<std::size_t>(std::max(threads, 1)));
  // A body that itself calls parallel_for runs its loop serially: pool threads never wait on
  // other pool tasks, so the pool cannot deadlock. Results are the same either way.
  if (workers <= 1 || on_pool_worker) {
    for (std::size_t i = 0; i < count; ++i) body(i);
    return;
  }
  std::vector<std::exception_ptr> errors(workers);
  std::vector<std::function<void()>> tasks;
  tasks.reserve(workers);
  for (std::size_t w = 0; w < workers; ++w) {
    const std::size_t first = count * w / workers;
    const std::size_t last = count * (w + 1) / workers;
    tasks.emplace_back([&body, &errors, w, first, last] {
      try {
        for (std::size_t i = first; i < last; ++i) body(i);
      } catch (...) {
        errors[w] = std::current_exception();
      }
    });
  }
  WorkerPool::instance().run_all(tasks);
  for (const auto& error : errors) {
    if (error) std::rethrow_exception(error);
  }
}

int hardware_threads(int limit) {
  return std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, std::max(limit, 1));
}

}  // namespace parley
