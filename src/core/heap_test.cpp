#include "core/heap.h"

#include <gtest/gtest.h>

#include <cstdlib>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace parley {
namespace {

// The sanitizers replace malloc: glibc's counters no longer see the blocks.
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define PARLEY_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define PARLEY_SANITIZED 1
#endif
#if defined(__GLIBC__) && !defined(PARLEY_SANITIZED)
#define PARLEY_GLIBC_HEAP 1
#endif

#if defined(PARLEY_GLIBC_HEAP)
// Held in volatile pointers so that the compiler keeps every allocation.
void* allocate(std::size_t bytes) {
  void* volatile block = std::malloc(bytes);
  static_cast<char*>(block)[0] = 1;
  return block;
}
#endif

TEST(Heap, LargeBlocksStayMappedAfterALargerOneIsFreed) {
#if !defined(PARLEY_GLIBC_HEAP)
  GTEST_SKIP() << "glibc's own heap only (not under a sanitizer)";
#else
  map_large_blocks_separately();
  // Left to itself, glibc would now raise its mmap threshold to 30 MB, and the 2 MB block below
  // would come from the heap, where freeing it would not give it back.
  std::free(allocate(30u << 20));
  const auto mapped_before = mallinfo2().hblks;
  void* block = allocate(2u << 20);
  EXPECT_EQ(mallinfo2().hblks, mapped_before + 1);
  std::free(block);
  EXPECT_EQ(mallinfo2().hblks, mapped_before);
  release_freed_heap();
#endif
}

}  // namespace
}  // namespace parley
