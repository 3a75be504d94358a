#pragma once
// Runs a function over the indices [0, count) on up to `threads` threads. Each thread takes one
// contiguous range of indices, so what a call computes for index i never depends on the thread
// count: results are identical for any number of threads as long as `body(i)` only writes what
// belongs to i.
#include <cstddef>
#include <functional>

namespace parley {

// Calls body(i) for every i in [0, count), splitting the indices into at most `threads`
// contiguous ranges (threads <= 1 or count <= 1: on the calling thread). The first exception a
// body throws (lowest range first) is rethrown after every thread has finished.
void parallel_for(std::size_t count, int threads, const std::function<void(std::size_t)>& body);

// The hardware's threads, but at least 1 and at most `limit`: for work that splits itself
// without a thread count from the caller (clustering).
int hardware_threads(int limit);

}  // namespace parley
