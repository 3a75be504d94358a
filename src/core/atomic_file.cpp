#include "core/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "core/error.h"

namespace parley {
namespace {

namespace fs = std::filesystem;

// As many as the kernel follows before ELOOP.
constexpr int kMaxLinks = 40;

// Closes the descriptor and removes the temporary file unless the rename published it.
class TemporaryFile {
 public:
  TemporaryFile(int descriptor, fs::path path) : descriptor_(descriptor), path_(std::move(path)) {}
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;
  ~TemporaryFile() {
    if (descriptor_ >= 0) ::close(descriptor_);
    if (!published_) ::unlink(path_.c_str());
  }
  int descriptor() const { return descriptor_; }
  const fs::path& path() const { return path_; }
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
  fs::path path_;
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

[[noreturn]] void fail_writing(const fs::path& path, int error) {
  fail("cannot write '{}': {}; {} (any earlier file there is unchanged)", path.string(),
       std::strerror(error), advice(error));
}

// Writes all of `bytes`; returns the write() error (0 when fine).
int write_all(int descriptor, std::string_view bytes) {
  for (std::size_t written = 0; written < bytes.size();) {
    const ssize_t count = ::write(descriptor, bytes.data() + written, bytes.size() - written);
    if (count < 0 && errno == EINTR) continue;
    if (count < 0) return errno;
    written += static_cast<std::size_t>(count);
  }
  return 0;
}

// The descriptor number when `path` names one of this process's own descriptors.
std::optional<int> own_descriptor(const fs::path& path) {
  const std::string text = path.lexically_normal().string();
  if (text == "/dev/stdout") return 1;
  if (text == "/dev/stderr") return 2;
  const std::string prefixes[] = {"/dev/fd/", "/proc/self/fd/",
                                  fmt::format("/proc/{}/fd/", static_cast<long>(::getpid()))};
  for (const std::string& prefix : prefixes) {
    if (!text.starts_with(prefix)) continue;
    const char* first = text.data() + prefix.size();
    const char* last = text.data() + text.size();
    int descriptor = -1;
    const auto [end, error] = std::from_chars(first, last, descriptor);
    if (error == std::errc() && end == last && first != last && descriptor >= 0) return descriptor;
  }
  return std::nullopt;
}

// Where an output named `path` goes: the file its chain of links ends at (a link to a missing
// file: that file), or one of the process's descriptors. Read through the chain rather than
// canonical(): /proc/self/fd/1 names a pipe as "pipe:[1234]", which is no path.
struct Destination {
  fs::path file;
  std::optional<int> descriptor;
};

Destination locate(const fs::path& path) {
  fs::path current = path;
  for (int hops = 0; hops < kMaxLinks; ++hops) {
    if (const auto descriptor = own_descriptor(current)) return {current, descriptor};
    struct stat status {};
    if (::lstat(current.c_str(), &status) != 0 || !S_ISLNK(status.st_mode)) break;
    std::error_code error;
    const fs::path target = fs::read_symlink(current, error);
    if (error) break;
    current = target.is_absolute() ? target : current.parent_path() / target;
  }
  return {current, std::nullopt};  // past kMaxLinks, stat() reports ELOOP
}

fs::path folder_of(const fs::path& file) {
  return file.has_parent_path() ? file.parent_path() : fs::path(".");
}

// Why no file can be created (or renamed into place) in the folder of `file`.
std::optional<std::string> folder_problem(const fs::path& file) {
  const fs::path folder = folder_of(file);
  std::error_code ignored;
  const fs::path shown = fs::absolute(file, ignored).parent_path();
  struct stat status {};
  if (::stat(folder.c_str(), &status) != 0) {
    if (errno == ENOENT) return fmt::format("the folder {} does not exist", shown.string());
    return fmt::format("the folder {}: {}", shown.string(), std::strerror(errno));
  }
  if (!S_ISDIR(status.st_mode)) return fmt::format("{} is not a folder", shown.string());
  if (::access(folder.c_str(), W_OK | X_OK) != 0) {
    if (errno == EROFS)
      return fmt::format("the folder {} is on a read-only file system", shown.string());
    return fmt::format("the folder {} is not writable ({}); check its permissions", shown.string(),
                       std::strerror(errno));
  }
  // access() answers for the permission bits only: for root every folder passes, and some file
  // systems (/proc, /sys, a full or quota-bound disk) refuse new files all the same. Creating one
  // is the only test that the write at the end of the work will succeed.
  static std::atomic<unsigned> counter{0};
  const fs::path probe =
      folder / fmt::format(".parley-probe-{}-{}", static_cast<long>(::getpid()), counter++);
  const int descriptor = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (descriptor < 0) {
    return fmt::format("no file can be created in the folder {} ({}); {}", shown.string(),
                       std::strerror(errno), advice(errno));
  }
  ::close(descriptor);
  ::unlink(probe.c_str());
  return std::nullopt;
}

std::optional<std::string> problem_of(const Destination& destination,
                                      const OutputOptions& options) {
  if (destination.descriptor) {
    const int flags = ::fcntl(*destination.descriptor, F_GETFL);
    if (flags < 0) return fmt::format("descriptor {} is not open", *destination.descriptor);
    if ((flags & O_ACCMODE) == O_RDONLY) {
      return fmt::format("descriptor {} is open for reading only", *destination.descriptor);
    }
    return std::nullopt;
  }
  const fs::path& file = destination.file;
  struct stat status {};
  if (::stat(file.c_str(), &status) != 0) {
    if (errno == ENOENT) return folder_problem(file);
    if (errno == ENOTDIR) return std::string("a folder on its path is a file");
    return fmt::format("{}; {}", std::strerror(errno), advice(errno));
  }
  if (S_ISDIR(status.st_mode)) return std::string("it is a folder; name a file");
  if (S_ISSOCK(status.st_mode)) return std::string("it is a socket; name a file");
  if (!S_ISREG(status.st_mode)) {
    // A device, FIFO or terminal, written in place.
    if (::access(file.c_str(), W_OK) != 0) return std::string(std::strerror(errno));
    return std::nullopt;
  }
  if (!options.overwrite_read_only) {
    // The mode bits themselves: for root, access() says every file is writable.
    if ((status.st_mode & (S_IWUSR | S_IWGRP | S_IWOTH)) == 0) {
      return fmt::format(
          "the file is read-only (mode {:04o}); make it writable, or set overwrite_read_only to "
          "replace it",
          status.st_mode & 07777);
    }
    if (::access(file.c_str(), W_OK) != 0 && errno != EROFS) {
      return fmt::format(
          "the file is not writable for this user ({}); set overwrite_read_only to replace it",
          std::strerror(errno));
    }
  }
  return folder_problem(file);
}

// A hidden name beside the destination: the rename stays within one file system.
TemporaryFile open_temporary(const fs::path& folder, const fs::path& name, const fs::path& shown) {
  static std::atomic<unsigned> counter{0};
  for (int attempt = 0;; ++attempt) {
    fs::path temporary = folder / fmt::format(".{}.partial-{}-{}", name.string(),
                                              static_cast<long>(::getpid()), counter++);
    // 0666 under the umask, as any other new file the user creates.
    const int descriptor = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (descriptor >= 0) return TemporaryFile(descriptor, std::move(temporary));
    if (errno != EEXIST || attempt > 100) fail_writing(shown, errno);
  }
}

// Writes, flushes to the disk and closes `file`.
void fill(TemporaryFile& file, std::string_view bytes, const fs::path& shown) {
  if (const int error = write_all(file.descriptor(), bytes); error != 0) fail_writing(shown, error);
  if (::fsync(file.descriptor()) != 0 && errno != EINVAL) fail_writing(shown, errno);
  if (const int error = file.close(); error != 0) fail_writing(shown, error);
}

// The new name reaches the disk with the folder; a failure here loses nothing that was there
// before, so it is not reported.
void sync_folder(const fs::path& folder) {
  if (const int descriptor = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      descriptor >= 0) {
    ::fsync(descriptor);
    ::close(descriptor);
  }
}

// The replaced file's mode (without set-id bits: a file another user replaces must not become
// theirs to run) and, where this user may give them, its owner and group.
void keep_attributes(int descriptor, const struct stat& old) {
  const bool owner_kept = ::fchown(descriptor, old.st_uid, old.st_gid) == 0 ||
                          ::fchown(descriptor, static_cast<uid_t>(-1), old.st_gid) == 0;
  static_cast<void>(owner_kept);  // else the writer owns it, as any file it creates
  const bool mode_kept = ::fchmod(descriptor, old.st_mode & 0777) == 0;
  static_cast<void>(mode_kept);  // its own new file: only a file system without modes refuses
}

void replace(const fs::path& shown, const fs::path& file, std::string_view bytes,
             const struct stat* old) {
  const fs::path folder = folder_of(file);
  TemporaryFile temporary = open_temporary(folder, file.filename(), shown);
  if (old != nullptr) keep_attributes(temporary.descriptor(), *old);
  fill(temporary, bytes, shown);
  if (::rename(temporary.path().c_str(), file.c_str()) != 0) fail_writing(shown, errno);
  temporary.published();
  sync_folder(folder);
}

void write_in_place(const fs::path& shown, int descriptor, std::string_view bytes) {
  // Whatever the process printed before through stdio comes first.
  if (descriptor == STDOUT_FILENO) std::fflush(stdout);
  if (descriptor == STDERR_FILENO) std::fflush(stderr);
  if (const int error = write_all(descriptor, bytes); error != 0) {
    fail("cannot write '{}': {}", shown.string(), std::strerror(error));
  }
}

}  // namespace

std::optional<std::string> output_problem(const fs::path& path, const OutputOptions& options) {
  return problem_of(locate(path), options);
}

void check_output_destination(const fs::path& path, const OutputOptions& options) {
  if (const auto problem = output_problem(path, options)) {
    fail("cannot write '{}': {}", path.string(), *problem);
  }
}

void write_file_atomically(const fs::path& path, std::string_view bytes,
                           const OutputOptions& options) {
  const Destination destination = locate(path);
  if (const auto problem = problem_of(destination, options)) {
    fail("cannot write '{}': {}", path.string(), *problem);
  }
  if (destination.descriptor) {
    write_in_place(path, *destination.descriptor, bytes);
    return;
  }
  struct stat status {};
  if (::stat(destination.file.c_str(), &status) != 0) {
    replace(path, destination.file, bytes, nullptr);
    return;
  }
  if (S_ISREG(status.st_mode)) {
    replace(path, destination.file, bytes, &status);
    return;
  }
  // A FIFO blocks here until a reader opens it, as a shell's `>` does.
  const int descriptor = ::open(destination.file.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
  if (descriptor < 0) fail("cannot write '{}': {}", path.string(), std::strerror(errno));
  const int error = write_all(descriptor, bytes);
  const int close_error = ::close(descriptor) == 0 ? 0 : errno;
  if (error != 0 || close_error != 0) {
    fail("cannot write '{}': {}", path.string(), std::strerror(error != 0 ? error : close_error));
  }
}

fs::path write_new_file(const fs::path& wanted, std::string_view bytes) {
  const fs::path folder = folder_of(wanted);
  TemporaryFile temporary = open_temporary(folder, wanted.filename(), wanted);
  fill(temporary, bytes, wanted);
  const std::string stem = wanted.stem().string();
  const std::string extension = wanted.extension().string();
  constexpr int kMostNames = 1000;
  for (int number = 1; number <= kMostNames; ++number) {
    const fs::path candidate =
        number == 1 ? wanted
                    : wanted.parent_path() / fmt::format("{}-{}{}", stem, number, extension);
    // link() fails with EEXIST on any name that is taken, a dangling link included.
    if (::link(temporary.path().c_str(), candidate.c_str()) == 0) {
      sync_folder(folder);
      return candidate;  // the temporary name goes with `temporary`
    }
    if (errno == EEXIST) continue;
    if (errno != EPERM && errno != EOPNOTSUPP && errno != ENOSYS && errno != EMLINK) {
      fail_writing(candidate, errno);
    }
    // A file system without hard links: the file is made exclusively and written in place.
    const int descriptor =
        ::open(candidate.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (descriptor < 0 && errno == EEXIST) continue;
    if (descriptor < 0) fail_writing(candidate, errno);
    TemporaryFile made(descriptor, candidate);
    fill(made, bytes, candidate);
    made.published();
    sync_folder(folder);
    return candidate;
  }
  fail("cannot write '{}': it and the next {} numbered names are all taken; remove some",
       wanted.string(), kMostNames - 1);
}

}  // namespace parley
