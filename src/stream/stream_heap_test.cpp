// The whole process's heap over a 3-hour stream, not the stream's own count of its containers
// (StreamDiarizer::state, which can only see what it counts): this program replaces the global
// operator new and delete to count the live heap bytes, so it is a program of its own.
#include <malloc.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>

#include "stream/stream_diarizer.h"
#include "stream/stream_test_support.h"

namespace {

std::atomic<std::int64_t> live_heap_bytes{0};

void* counted(std::size_t bytes, std::size_t alignment = 0) {
  void* memory =
      alignment > alignof(std::max_align_t)
          ? std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment)
          : std::malloc(bytes == 0 ? 1 : bytes);
  if (memory == nullptr) throw std::bad_alloc();
  live_heap_bytes += static_cast<std::int64_t>(::malloc_usable_size(memory));
  return memory;
}

void release(void* memory) noexcept {
  if (memory == nullptr) return;
  live_heap_bytes -= static_cast<std::int64_t>(::malloc_usable_size(memory));
  std::free(memory);
}

}  // namespace

void* operator new(std::size_t bytes) { return counted(bytes); }
void* operator new[](std::size_t bytes) { return counted(bytes); }
void* operator new(std::size_t bytes, std::align_val_t alignment) {
  return counted(bytes, static_cast<std::size_t>(alignment));
}
void* operator new[](std::size_t bytes, std::align_val_t alignment) {
  return counted(bytes, static_cast<std::size_t>(alignment));
}
void* operator new(std::size_t bytes, const std::nothrow_t&) noexcept {
  try {
    return counted(bytes);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t bytes, const std::nothrow_t&) noexcept {
  try {
    return counted(bytes);
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void* memory) noexcept { release(memory); }
void operator delete[](void* memory) noexcept { release(memory); }
void operator delete(void* memory, std::size_t) noexcept { release(memory); }
void operator delete[](void* memory, std::size_t) noexcept { release(memory); }
void operator delete(void* memory, std::align_val_t) noexcept { release(memory); }
void operator delete[](void* memory, std::align_val_t) noexcept { release(memory); }
void operator delete(void* memory, std::size_t, std::align_val_t) noexcept { release(memory); }
void operator delete[](void* memory, std::size_t, std::align_val_t) noexcept { release(memory); }
void operator delete(void* memory, const std::nothrow_t&) noexcept { release(memory); }
void operator delete[](void* memory, const std::nothrow_t&) noexcept { release(memory); }

namespace parley::stream {
namespace {

TEST(StreamHeap, TheCounterSeesAllocations) {
  const std::int64_t before = live_heap_bytes;
  auto block = std::make_unique<std::vector<char>>(1 << 20);
  EXPECT_GE(live_heap_bytes - before, 1 << 20);
  block.reset();
  EXPECT_LT(live_heap_bytes - before, 1024);
}

// The process's live heap after 3 minutes and after 3 hours of a stream on fake networks, less
// the finished turns kept for finish()'s result (their vectors' capacity), is the same within a
// few kilobytes: nothing else grows with the stream's length.
TEST(StreamHeap, ProcessHeapStaysFlatOverThreeHours) {
  const StreamModels models(std::make_unique<testing::LevelModel>());
  StreamDiarizer diarizer(models, StreamConfig{});
  const std::vector<float> minute = testing::conversation(60.0, 4, 16000.0, 11);
  const auto turns_bytes = [&] {
    const StreamState state = diarizer.state();
    return static_cast<std::int64_t>(state.bytes - state.working_bytes);
  };
  std::int64_t heap_3_minutes = 0;
  std::int64_t turns_3_minutes = 0;
  std::size_t events = 0;
  for (int m = 1; m <= 180; ++m) {
    diarizer.push(minute);
    events += diarizer.take_events().size();
    if (m == 3) {
      heap_3_minutes = live_heap_bytes;
      turns_3_minutes = turns_bytes();
    }
  }
  const std::int64_t heap_3_hours = live_heap_bytes;
  const std::int64_t turns_3_hours = turns_bytes();
  EXPECT_GT(events, 1000U);
  // The turns did grow (the heap counted them), and they are all that did.
  EXPECT_GT(turns_3_hours - turns_3_minutes, 100000);
  EXPECT_GT(heap_3_hours - heap_3_minutes, 100000);
  const std::int64_t growth = (heap_3_hours - turns_3_hours) - (heap_3_minutes - turns_3_minutes);
  EXPECT_LE(std::abs(growth), 16 * 1024)
      << "heap less the turns: " << heap_3_minutes - turns_3_minutes << " bytes after 3 min, "
      << heap_3_hours - turns_3_hours << " after 3 h";
  std::printf("heap less the finished turns: %lld bytes after 3 min, %lld after 3 h\n",
              static_cast<long long>(heap_3_minutes - turns_3_minutes),
              static_cast<long long>(heap_3_hours - turns_3_hours));
}

}  // namespace
}  // namespace parley::stream
