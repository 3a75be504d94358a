#include "core/heap.h"

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

}  // namespace parley
