#pragma once
// Handing freed heap memory back to the system between stages.

namespace parley {

// What the program freed stays in glibc's per-thread heaps (the mmap threshold rises after
// every large free) and counts in its resident memory until reused: call this between stages
// whose peaks would otherwise stack. A few milliseconds; does nothing off glibc.
void release_freed_heap();

}  // namespace parley
