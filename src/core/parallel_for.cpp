#include "core/parallel_for.h"

#include <algorithm>
#include <exception>
#include <thread>
#include <vector>

namespace parley {

void parallel_for(std::size_t count, int threads, const std::function<void(std::size_t)>& body) {
  const std::size_t workers = std::min(count, static_cast<std::size_t>(std::max(threads, 1)));
  if (workers <= 1) {
    for (std::size_t i = 0; i < count; ++i) body(i);
    return;
  }
  std::vector<std::exception_ptr> errors(workers);
  {
    // jthreads join on destruction, also when starting a later one throws.
    std::vector<std::jthread> pool;
    pool.reserve(workers);
    for (std::size_t w = 0; w < workers; ++w) {
      const std::size_t first = count * w / workers;
      const std::size_t last = count * (w + 1) / workers;
      pool.emplace_back([&body, &errors, w, first, last] {
        try {
          for (std::size_t i = first; i < last; ++i) body(i);
        } catch (...) {
          errors[w] = std::current_exception();
        }
      });
    }
  }
  for (const auto& error : errors) {
    if (error) std::rethrow_exception(error);
  }
}

}  // namespace parley
