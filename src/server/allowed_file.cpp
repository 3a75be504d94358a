#include "server/allowed_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

namespace parley::server {
namespace fs = std::filesystem;

OpenedFile::~OpenedFile() {
  if (descriptor_ >= 0) ::close(descriptor_);
}

fs::path OpenedFile::path() const { return fmt::format("/proc/self/fd/{}", descriptor_); }

AllowedFile open_allowed_file(const fs::path& root, const fs::path& path) {
  AllowedFile result;
  std::error_code error;
  const fs::path real_root = fs::canonical(root, error);
  if (error) return result;
  const fs::path full = path.is_absolute() ? path : root / path;
  // Opening a device can itself act (rewind a tape, claim a modem): only what names a regular
  // file is opened. The fstat() of the open file below is what decides; this spares the rest.
  struct stat named {};
  if (::stat(full.c_str(), &named) != 0 || !S_ISREG(named.st_mode)) return result;
  const int descriptor = ::open(full.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (descriptor < 0) return result;
  OpenedFile file(descriptor);
  struct stat status {};
  if (::fstat(descriptor, &status) != 0 || !S_ISREG(status.st_mode)) return result;
  // Regular files ignore O_NONBLOCK; readers get a plain descriptor all the same.
  ::fcntl(descriptor, F_SETFL, ::fcntl(descriptor, F_GETFL) & ~O_NONBLOCK);
  const fs::path real = fs::read_symlink(file.path(), error);
  if (error) return result;
  const std::string inside = real_root.string() + (real_root.string().back() == '/' ? "" : "/");
  if (real.string().rfind(inside, 0) != 0) {
    result.check = AllowedFileCheck::kOutside;
    return result;
  }
  result.check = AllowedFileCheck::kInside;
  result.resolved = real;
  result.file.emplace(std::move(file));
  return result;
}

}  // namespace parley::server
