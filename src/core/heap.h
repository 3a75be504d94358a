#pragma once
// Handing freed heap memory back to the system between stages, and how much memory the machine
// has (what option values that size buffers are bounded by).
#include <cstdint>

namespace parley {

// What the program freed stays in glibc's per-thread heaps (the mmap threshold rises after
// every large free) and counts in its resident memory until reused: call this between stages
// whose peaks would otherwise stack. A few milliseconds; does nothing off glibc.
void release_freed_heap();

// The machine's physical memory in bytes (sysconf), or 0 when the system does not say.
std::uintmax_t physical_memory_bytes();

}  // namespace parley
