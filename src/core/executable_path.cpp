#include "core/executable_path.h"

#include <dlfcn.h>
#include <link.h>

#include <system_error>

namespace parley {

std::filesystem::path executable_folder() {
  std::error_code error;
  const std::filesystem::path executable = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return {};
  return executable.parent_path();
}

std::filesystem::path code_folder() {
  // The link map, not dladdr's file name: for code in the executable itself that name is argv[0],
  // which may be relative or a bare command name.
  Dl_info info{};
  void* map_pointer = nullptr;
  const void* here = reinterpret_cast<const void*>(&code_folder);
  if (dladdr1(here, &info, &map_pointer, RTLD_DL_LINKMAP) == 0 || map_pointer == nullptr) {
    return executable_folder();
  }
  const auto* map = static_cast<const link_map*>(map_pointer);
  if (map->l_name == nullptr || map->l_name[0] == '\0') return executable_folder();
  std::error_code error;
  const std::filesystem::path file = std::filesystem::canonical(map->l_name, error);
  if (error) return {};
  return file.parent_path();
}

}  // namespace parley
