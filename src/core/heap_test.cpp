#include "core/heap.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <vector>

#include "core/sanitizers.h"

namespace parley {
namespace {

long resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  long size = 0;
  long resident = 0;
  statm >> size >> resident;
  return resident * 4096;
}

TEST(Heap, FreedBlocksGoBackToTheSystem) {
#if !defined(__GLIBC__) || defined(PARLEY_SANITIZED)
  // The sanitizers replace malloc: their heaps do not keep what glibc keeps.
  GTEST_SKIP() << "glibc's own heap only (not under a sanitizer)";
#else
  // 48 MB in blocks below glibc's mmap threshold, with a block after them that keeps the heap
  // from shrinking at its top: freed, they stay resident until trimmed.
  constexpr std::size_t kBlocks = 768;
  constexpr std::size_t kBlockBytes = 64 << 10;
  std::vector<char*> blocks;
  for (std::size_t i = 0; i < kBlocks; ++i) {
    char* volatile block = static_cast<char*>(std::malloc(kBlockBytes));
    for (std::size_t byte = 0; byte < kBlockBytes; byte += 4096) block[byte] = 1;
    blocks.push_back(static_cast<char*>(block));
  }
  char* volatile pin = static_cast<char*>(std::malloc(64));
  pin[0] = 1;
  for (char* block : blocks) std::free(block);
  const long before = resident_bytes();
  release_freed_heap();
  EXPECT_LT(resident_bytes(), before - 32L * 1024 * 1024);
  std::free(pin);
#endif
}

// Option bounds are taken from this: never more than the machine has, never more than a
// container's cgroup limit (which the machine's figure alone ignores), and half of it a setting.
TEST(Heap, TheMemoryBudgetIsHalfOfWhatTheProcessMayUse) {
  const std::uintmax_t physical = static_cast<std::uintmax_t>(::sysconf(_SC_PHYS_PAGES)) *
                                  static_cast<std::uintmax_t>(::sysconf(_SC_PAGESIZE));
  const std::uintmax_t usable = usable_memory_bytes();
  ASSERT_GT(usable, 0u);
  EXPECT_LE(usable, physical);
  std::ifstream limit("/sys/fs/cgroup/memory.max");
  std::uintmax_t cgroup_limit = 0;
  if (limit >> cgroup_limit && cgroup_limit > 0) {
    EXPECT_LE(usable, cgroup_limit);
  }
  EXPECT_EQ(memory_budget_bytes(), usable / 2);
}

}  // namespace
}  // namespace parley
