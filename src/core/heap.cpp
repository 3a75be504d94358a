#include "core/heap.h"

#include <unistd.h>

#include <cstdlib>  // defines __GLIBC__ on glibc
#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace parley {

void release_freed_heap() {
#if defined(__GLIBC__)
  ::malloc_trim(0);
#endif
}

std::uintmax_t physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  return static_cast<std::uintmax_t>(pages) * static_cast<std::uintmax_t>(page_size);
}

}  // namespace parley
