#pragma once
// Handing freed heap memory back to the system between stages.

namespace parley {

// What the program freed stays in glibc's per-thread heaps (the mmap threshold rises after
// every large free) and counts in its resident memory until reused: call this between stages
// whose peaks would otherwise stack. A few milliseconds; does nothing off glibc.
void release_freed_heap();

// For programs (not the library, which leaves its host's heap alone): blocks of 1 MB and more
// are always mapped on their own and go back to the system when freed. glibc otherwise raises
// its mmap threshold to the largest block freed so far (up to 32 MB), after which such blocks
// stay in the heap once freed: reading a 26 MB model file at start-up alone left 10 minutes of
// diarization 35 MB higher at its peak, and all such frees together about 80 MB.
void map_large_blocks_separately();

}  // namespace parley
