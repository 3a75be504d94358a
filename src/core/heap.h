#pragma once
// Handing freed heap memory back to the system between stages, and how much memory option
// values that size buffers may claim.
#include <cstdint>

namespace parley {

// What the program freed stays in glibc's per-thread heaps (the mmap threshold rises after
// every large free) and counts in its resident memory until reused: call this between stages
// whose peaks would otherwise stack. A few milliseconds; does nothing off glibc.
void release_freed_heap();

// What this process may use, in bytes: the machine's physical memory, or its control group's
// limit (cgroup v2 memory.max, v1 memory.limit_in_bytes) where that is lower, as in a container
// or a batch job; 0 when the system does not say.
std::uintmax_t usable_memory_bytes();

// What one setting's buffers (a batch's activations, decoded recordings, engines) may claim:
// half of usable_memory_bytes(), the other half left to the models, the audio and everything
// else on the machine. 0 when the system does not say.
std::uintmax_t memory_budget_bytes();

}  // namespace parley
