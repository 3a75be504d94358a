#include "core/executable_path.h"

#include <system_error>

namespace parley {

std::filesystem::path executable_folder() {
  std::error_code error;
  const std::filesystem::path executable = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return {};
  return executable.parent_path();
}

}  // namespace parley
