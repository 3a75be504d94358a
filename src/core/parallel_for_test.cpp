#include "core/parallel_for.h"

#include <gtest/gtest.h>

#include <atomic>
#include <latch>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/error.h"

namespace parley {
namespace {

TEST(ParallelFor, VisitsEveryIndexOnceForAnyThreadCount) {
  for (int threads : {0, 1, 2, 3, 8, 100}) {
    for (std::size_t count : {0u, 1u, 2u, 7u, 64u}) {
      std::vector<std::atomic<int>> visits(count);
      parallel_for(count, threads, [&](std::size_t i) { visits[i].fetch_add(1); });
      for (std::size_t i = 0; i < count; ++i) {
        EXPECT_EQ(visits[i].load(), 1) << "index " << i << " threads " << threads;
      }
    }
  }
}

TEST(ParallelFor, UsesSeveralThreadsWhenAsked) {
  std::mutex mutex;
  std::set<std::thread::id> ids;
  // Every range waits for the others to start: this only finishes when all four run at once.
  std::latch all_started(4);
  parallel_for(4, 4, [&](std::size_t) {
    {
      std::lock_guard lock(mutex);
      ids.insert(std::this_thread::get_id());
    }
    all_started.arrive_and_wait();
  });
  EXPECT_EQ(ids.size(), 4u);
  ids.clear();
  parallel_for(4, 1, [&](std::size_t) { ids.insert(std::this_thread::get_id()); });
  EXPECT_EQ(ids.size(), 1u);
  EXPECT_EQ(*ids.begin(), std::this_thread::get_id());
}

TEST(ParallelFor, RethrowsTheFirstFailureAfterAllThreadsFinish) {
  std::atomic<int> done{0};
  try {
    parallel_for(8, 4, [&](std::size_t i) {
      if (i == 5) fail("index {} failed", i);
      if (i == 7) throw std::runtime_error("later failure");
      done.fetch_add(1);
    });
    FAIL() << "expected an exception";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(), "index 5 failed");
  }
  EXPECT_EQ(done.load(), 6);
}

TEST(ParallelFor, NestedAndConcurrentCallsFinish) {
  // A body that calls parallel_for, from two threads at once: the pool must neither deadlock
  // nor mix up the callers' work.
  std::vector<std::atomic<int>> sums(2);
  auto caller = [&sums](std::size_t which) {
    parallel_for(8, 4, [&sums, which](std::size_t) {
      parallel_for(8, 4,
                   [&sums, which](std::size_t i) { sums[which].fetch_add(static_cast<int>(i)); });
    });
  };
  std::jthread first(caller, 0);
  std::jthread second(caller, 1);
  first.join();
  second.join();
  EXPECT_EQ(sums[0].load(), 8 * 28);
  EXPECT_EQ(sums[1].load(), 8 * 28);
}

}  // namespace
}  // namespace parley
