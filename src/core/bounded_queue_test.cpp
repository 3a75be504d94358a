#include "core/bounded_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

namespace parley {
namespace {

TEST(BoundedQueue, DeliversEveryItemInOrderAcrossThreads) {
  BoundedQueue<int> queue(3);
  std::jthread producer([&] {
    for (int i = 0; i < 1000; ++i) ASSERT_TRUE(queue.push(i));
    queue.close();
  });
  std::vector<int> received;
  while (auto item = queue.pop()) received.push_back(*item);
  ASSERT_EQ(received.size(), 1000u);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(received[static_cast<std::size_t>(i)], i);
}

TEST(BoundedQueue, ProducerNeverRunsMoreThanCapacityAhead) {
  BoundedQueue<int> queue(2);
  std::atomic<int> pushed{0};
  std::jthread producer([&] {
    for (int i = 0; i < 10; ++i) {
      if (!queue.push(i)) return;
      pushed.fetch_add(1);
    }
    queue.close();
  });
  // With nothing taken, the producer stops after filling the queue.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(pushed.load(), 2);
  int taken = 0;
  while (queue.pop()) ++taken;
  EXPECT_EQ(taken, 10);
}

TEST(BoundedQueue, ProducerErrorReachesConsumerAfterTheItemsBeforeIt) {
  BoundedQueue<int> queue(4);
  queue.push(7);
  queue.close(std::make_exception_ptr(std::runtime_error("segmentation failed")));
  EXPECT_EQ(queue.pop().value(), 7);
  EXPECT_THROW(queue.pop(), std::runtime_error);
}

TEST(BoundedQueue, CancelReleasesABlockedProducer) {
  BoundedQueue<int> queue(1);
  std::atomic<bool> push_result{true};
  std::jthread producer([&] {
    queue.push(1);
    push_result = queue.push(2);  // blocks: the queue is full
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  queue.cancel();
  producer.join();
  EXPECT_FALSE(push_result.load());
  EXPECT_FALSE(queue.push(3));
}

TEST(BoundedQueue, ZeroCapacityIsRefused) { EXPECT_THROW(BoundedQueue<int>(0), Error); }

}  // namespace
}  // namespace parley
