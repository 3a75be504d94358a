#include "core/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "core/error.h"

namespace parley {
namespace {

// Closes the descriptor and removes the temporary file unless the rename published it.
class TemporaryFile {
 public:
  TemporaryFile(int descriptor, std::filesystem::path path)
      : descriptor_(descriptor), path_(std::move(path)) {}
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;
  ~TemporaryFile() {
    if (descriptor_ >= 0) ::close(descriptor_);
    if (!published_) ::unlink(path_.c_str());
  }
  int descriptor() const { return descriptor_; }
  // Closes the descriptor; returns the close() error (0 when fine), which can report a failed
  // write on network and some local file systems.
  int close() {
    const int result = ::close(descriptor_) == 0 ? 0 : errno;
    descriptor_ = -1;
    return result;
  }
  void published() { published_ = true; }

 private:
  int descriptor_;
  std::filesystem::path path_;
  bool published_ = false;
};

std::string advice(int error) {
  switch (error) {
    case ENOSPC:
    case EDQUOT:
      return "free some disk space";
    case ENOENT:
    case ENOTDIR:
      return "check that the folder exists";
    case EACCES:
    case EPERM:
    case EROFS:
      return "check that the folder is writable";
    default:
      return "check the folder";
  }
}

[[noreturn]] void fail_writing(const std::filesystem::path& path, int error) {
  fail("cannot write '{}': {}; {} (any earlier file there is unchanged)", path.string(),
       std::strerror(error), advice(error));
}

}  // namespace

void write_file_atomically(const std::filesystem::path& path, std::string_view bytes) {
  static std::atomic<unsigned> counter{0};
  const std::filesystem::path folder =
      path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail_writing(path, EISDIR);
  // A hidden name beside the destination: the rename stays within one file system.
  int descriptor = -1;
  std::filesystem::path temporary;
  for (int attempt = 0; descriptor < 0; ++attempt) {
    temporary = folder / fmt::format(".{}.partial-{}-{}", path.filename().string(),
                                     static_cast<long>(::getpid()), counter++);
    // 0666 under the umask, as any other new file the user creates.
    descriptor = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (descriptor < 0 && (errno != EEXIST || attempt > 100)) fail_writing(path, errno);
  }
  TemporaryFile file(descriptor, temporary);
  for (std::size_t written = 0; written < bytes.size();) {
    const ssize_t count =
        ::write(file.descriptor(), bytes.data() + written, bytes.size() - written);
    if (count < 0 && errno == EINTR) continue;
    if (count < 0) fail_writing(path, errno);
    written += static_cast<std::size_t>(count);
  }
  if (::fsync(file.descriptor()) != 0 && errno != EINVAL) fail_writing(path, errno);
  if (const int error = file.close(); error != 0) fail_writing(path, error);
  if (::rename(temporary.c_str(), path.c_str()) != 0) fail_writing(path, errno);
  file.published();
  // The rename itself reaches the disk with the folder; a failure here loses nothing that was
  // there before, so it is not reported.
  if (const int folder_descriptor = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      folder_descriptor >= 0) {
    ::fsync(folder_descriptor);
    ::close(folder_descriptor);
  }
}

}  // namespace parley
