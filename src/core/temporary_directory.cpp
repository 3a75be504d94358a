#include "core/temporary_directory.h"

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <system_error>
#include <vector>

#include "core/error.h"

namespace parley {

TemporaryDirectory::TemporaryDirectory(const std::string& prefix) {
  std::error_code ec;
  const auto base = std::filesystem::temp_directory_path(ec);
  if (ec)
    fail("cannot find the temporary folder ({}); set TMPDIR to a writable folder", ec.message());
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
