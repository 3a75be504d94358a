#include "core/heap.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>  // defines __GLIBC__ on glibc
#include <fstream>
#include <string>
#include <vector>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace parley {

void release_freed_heap() {
#if defined(__GLIBC__)
  ::malloc_trim(0);
#endif
}

namespace {

std::uintmax_t physical_memory() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  return static_cast<std::uintmax_t>(pages) * static_cast<std::uintmax_t>(page_size);
}

// The number in a cgroup limit file, 0 for "max", a missing file or anything else.
std::uintmax_t read_limit(const std::string& file) {
  std::ifstream stream(file);
  std::string text;
  if (!(stream >> text)) return 0;
  std::uintmax_t limit = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), limit);
  return error == std::errc() && end == text.data() + text.size() ? limit : 0;
}

// The limit files that may apply to this process: its own group's, named in /proc/self/cgroup
// ("0::/path" for v2, "N:...memory...:/path" for v1), and the root of each hierarchy, which is
// the process's own group inside a container whose cgroup namespace hides the path.
std::vector<std::string> cgroup_limit_files() {
  std::vector<std::string> files = {"/sys/fs/cgroup/memory.max",
                                    "/sys/fs/cgroup/memory/memory.limit_in_bytes"};
  std::ifstream groups("/proc/self/cgroup");
  for (std::string line; std::getline(groups, line);) {
    const auto first = line.find(':');
    const auto second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (path.empty() || path == "/" || path.find("..") != std::string::npos) continue;
    if (controllers.empty()) files.push_back("/sys/fs/cgroup" + path + "/memory.max");
    if (("," + controllers + ",").find(",memory,") != std::string::npos) {
      files.push_back("/sys/fs/cgroup/memory" + path + "/memory.limit_in_bytes");
    }
  }
  return files;
}

}  // namespace

std::uintmax_t usable_memory_bytes() {
  std::uintmax_t usable = physical_memory();
  for (const std::string& file : cgroup_limit_files()) {
    const std::uintmax_t limit = read_limit(file);
    if (limit > 0) usable = usable == 0 ? limit : std::min(usable, limit);
  }
  return usable;
}

std::uintmax_t memory_budget_bytes() { return usable_memory_bytes() / 2; }

}  // namespace parley
