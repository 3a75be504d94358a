#include "core/temporary_directory.h"

#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>
#include <vector>

#include "core/error.h"

namespace parley {

std::filesystem::path temporary_folder() {
  std::error_code ec;
  const std::filesystem::path folder = std::filesystem::temp_directory_path(ec);
  if (ec) {
    const char* variable = std::getenv("TMPDIR");
    if (variable != nullptr && *variable != '\0') {
      fail(
          "TMPDIR is set to '{}', which is not an existing folder: create that folder, or set "
          "TMPDIR to one with room for temporary files (or unset it to use /tmp)",
          variable);
    }
    fail("cannot find the temporary folder ({}); set TMPDIR to a writable folder", ec.message());
  }
  if (::access(folder.c_str(), W_OK | X_OK) != 0) {
    fail("the temporary folder {} is not writable ({}); set TMPDIR to a writable folder",
         folder.string(), std::strerror(errno));
  }
  return folder;
}

TemporaryDirectory::TemporaryDirectory(const std::string& prefix) {
  const auto base = temporary_folder();
  std::string pattern = (base / (prefix + "XXXXXX")).string();
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  if (::mkdtemp(name.data()) == nullptr) {
    fail("cannot create a temporary folder in {} ({}); set TMPDIR to a writable folder",
         base.string(), std::strerror(errno));
  }
  path_ = name.data();
}

TemporaryDirectory::~TemporaryDirectory() {
  std::error_code ec;  // a destructor must not throw; at worst the folder stays in /tmp
  std::filesystem::remove_all(path_, ec);
}

}  // namespace parley
