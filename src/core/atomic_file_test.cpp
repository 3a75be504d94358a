#include "core/atomic_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/temporary_directory.h"

namespace parley {
namespace {

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> names_in(const std::filesystem::path& folder) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string error_of(const std::filesystem::path& path, const std::string& bytes,
                     const OutputOptions& options = {}) {
  try {
    write_file_atomically(path, bytes, options);
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

TEST(AtomicFile, ReplacesTheFileWhole) {
  const TemporaryDirectory dir("parley-atomic-test-");
  write_file_atomically(dir.path() / "t.srt", "old");
  write_file_atomically(dir.path() / "t.srt", "new text");
  EXPECT_EQ(read_text(dir.path() / "t.srt"), "new text");
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"t.srt"});
}

// The disk fills up in the middle of the write (a file-size limit, as a full disk would):
// the old file stays as it was and no partial file is left.
TEST(AtomicFile, AFailedWriteKeepsTheOldFileAndLeavesNoPartialFile) {
  const TemporaryDirectory dir("parley-atomic-test-");
  const auto path = dir.path() / "t.srt";
  write_file_atomically(path, "1\n00:00:00,000 --> 00:00:01,000\nold cue\n");
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  const auto previous_handler = ::signal(SIGXFSZ, SIG_IGN);  // then write() fails with EFBIG
  rlimit limited = saved;
  limited.rlim_cur = 16;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limited), 0);
  const std::string message = error_of(path, std::string(4096, 'x'));
  ::setrlimit(RLIMIT_FSIZE, &saved);
  ::signal(SIGXFSZ, previous_handler);
  EXPECT_NE(message.find(path.string()), std::string::npos) << message;
  EXPECT_NE(message.find("unchanged"), std::string::npos) << message;
  EXPECT_EQ(read_text(path), "1\n00:00:00,000 --> 00:00:01,000\nold cue\n");
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"t.srt"});
}

TEST(AtomicFile, AFolderThatIsNotThereOrIsAFileIsNamed) {
  const TemporaryDirectory dir("parley-atomic-test-");
  const auto missing = dir.path() / "missing" / "out.rttm";
  EXPECT_NE(error_of(missing, "x").find(missing.string()), std::string::npos);
  write_file_atomically(dir.path() / "folder", "a file where a folder should be");
  const auto under_file = dir.path() / "folder" / "out.rttm";
  const std::string message = error_of(under_file, "x");
  EXPECT_NE(message.find(under_file.string()), std::string::npos) << message;
  EXPECT_NE(error_of(dir.path(), "x").find("is a folder"), std::string::npos);
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"folder"});
}

struct stat status_of(const std::filesystem::path& path) {
  struct stat status {};
  EXPECT_EQ(::lstat(path.c_str(), &status), 0) << path;
  return status;
}

// A FIFO is written in place, as `>` would: its reader gets the bytes and the FIFO stays.
TEST(AtomicFile, AFifoIsWrittenInPlaceForItsReader) {
  const TemporaryDirectory dir("parley-atomic-test-");
  const auto fifo = dir.path() / "turns.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string received;
  std::thread reader([&] { received = read_text(fifo); });
  const std::string text(100000, 'r');  // more than a pipe holds: the reader must be reading
  write_file_atomically(fifo, text);
  reader.join();
  EXPECT_EQ(received, text);
  EXPECT_TRUE(S_ISFIFO(status_of(fifo).st_mode));
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"turns.fifo"});
}

// A link is followed: the file it names gets the bytes, and the link stays a link to it.
TEST(AtomicFile, ALinkIsFollowedAndKept) {
  const TemporaryDirectory dir("parley-atomic-test-");
  std::filesystem::create_directory(dir.path() / "real");
  write_file_atomically(dir.path() / "real" / "target.rttm", "old");
  std::filesystem::create_symlink("real/target.rttm", dir.path() / "out.rttm");
  write_file_atomically(dir.path() / "out.rttm", "new");
  EXPECT_TRUE(S_ISLNK(status_of(dir.path() / "out.rttm").st_mode));
  EXPECT_EQ(std::filesystem::read_symlink(dir.path() / "out.rttm"), "real/target.rttm");
  EXPECT_EQ(read_text(dir.path() / "real" / "target.rttm"), "new");
  EXPECT_EQ(names_in(dir.path() / "real"), std::vector<std::string>{"target.rttm"});
  // A link to a file not yet there creates that file; a chain of links is followed to its end.
  std::filesystem::create_symlink(dir.path() / "real" / "fresh.rttm", dir.path() / "dangling");
  std::filesystem::create_symlink("dangling", dir.path() / "chain");
  write_file_atomically(dir.path() / "chain", "fresh");
  EXPECT_EQ(read_text(dir.path() / "real" / "fresh.rttm"), "fresh");
  EXPECT_TRUE(S_ISLNK(status_of(dir.path() / "chain").st_mode));
  EXPECT_TRUE(S_ISLNK(status_of(dir.path() / "dangling").st_mode));
}

// A character device is written, never replaced (as root, /dev/null itself was replaced by a
// regular file). mknod needs root; the device is a private copy of /dev/null.
TEST(AtomicFile, ACharacterDeviceIsWrittenNotReplaced) {
  if (::geteuid() != 0) GTEST_SKIP() << "mknod needs root";
  const TemporaryDirectory dir("parley-atomic-test-");
  const auto device = dir.path() / "mynull";
  if (::mknod(device.c_str(), S_IFCHR | 0666, ::makedev(1, 3)) != 0) {
    GTEST_SKIP() << "mknod refused here: " << std::strerror(errno);
  }
  const struct stat before = status_of(device);
  EXPECT_EQ(output_problem(device), std::nullopt);
  write_file_atomically(device, "SPEAKER t 1 0.000 1.000 <NA> <NA> SPEAKER_00 <NA> <NA>\n");
  const struct stat after = status_of(device);
  EXPECT_TRUE(S_ISCHR(after.st_mode));
  EXPECT_EQ(after.st_rdev, before.st_rdev);
  EXPECT_EQ(after.st_ino, before.st_ino);
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"mynull"});
}

// /dev/fd/N and /proc/self/fd/N name the process's own descriptors (/dev/stdout is N = 1): a
// pipe there gets the bytes (its /proc link reads "pipe:[...]", which is no path).
TEST(AtomicFile, OwnDescriptorsAreWrittenThrough) {
  int ends[2];
  ASSERT_EQ(::pipe(ends), 0);
  const std::string via_proc = "/proc/self/fd/" + std::to_string(ends[1]);
  const std::string via_dev = "/dev/fd/" + std::to_string(ends[1]);
  write_file_atomically(via_proc, "one ");
  write_file_atomically(via_dev, "two");
  ::close(ends[1]);
  std::string received;
  char buffer[64];
  for (ssize_t count; (count = ::read(ends[0], buffer, sizeof buffer)) > 0;) {
    received.append(buffer, static_cast<std::size_t>(count));
  }
  ::close(ends[0]);
  EXPECT_EQ(received, "one two");
  EXPECT_NE(output_problem(via_proc).value_or("").find("not open"), std::string::npos);
}

// A replaced file keeps its mode (a 0600 file came back 0644) and its owner.
TEST(AtomicFile, AReplacedFileKeepsItsModeAndOwner) {
  const TemporaryDirectory dir("parley-atomic-test-");
  const auto path = dir.path() / "private.rttm";
  write_file_atomically(path, "old");
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  write_file_atomically(path, "new");
  EXPECT_EQ(status_of(path).st_mode & 07777, 0600u);
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  write_file_atomically(path, "newer");
  EXPECT_EQ(status_of(path).st_mode & 07777, 0640u);
  EXPECT_EQ(read_text(path), "newer");
  if (::geteuid() == 0) {
    ASSERT_EQ(::chown(path.c_str(), 12345, 23456), 0);
    write_file_atomically(path, "theirs");
    EXPECT_EQ(status_of(path).st_uid, 12345u);
    EXPECT_EQ(status_of(path).st_gid, 23456u);
  }
}

// A read-only file is refused (for root too, whom permission bits do not stop) unless
// overwrite_read_only is set; then it is replaced and stays read-only.
TEST(AtomicFile, AReadOnlyFileIsRefusedUnlessForced) {
  const TemporaryDirectory dir("parley-atomic-test-");
  const auto path = dir.path() / "reference.rttm";
  write_file_atomically(path, "reference");
  ASSERT_EQ(::chmod(path.c_str(), 0444), 0);
  const std::string message = error_of(path, "hypothesis");
  EXPECT_NE(message.find(path.string()), std::string::npos) << message;
  EXPECT_NE(message.find("read-only (mode 0444)"), std::string::npos) << message;
  EXPECT_NE(message.find("overwrite_read_only"), std::string::npos) << message;
  EXPECT_EQ(read_text(path), "reference");
  EXPECT_EQ(output_problem(path), message.substr(message.find(": ") + 2));
  EXPECT_EQ(output_problem(path, {.overwrite_read_only = true}), std::nullopt);
  write_file_atomically(path, "hypothesis", {.overwrite_read_only = true});
  EXPECT_EQ(read_text(path), "hypothesis");
  EXPECT_EQ(status_of(path).st_mode & 07777, 0444u);
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"reference.rttm"});
}

TEST(AtomicFile, ProblemsAreFoundWithoutWriting) {
  const TemporaryDirectory dir("parley-atomic-test-");
  EXPECT_EQ(output_problem(dir.path() / "new.rttm"), std::nullopt);
  EXPECT_EQ(output_problem(dir.path() / "missing" / "x.rttm"),
            "the folder " + (dir.path() / "missing").string() + " does not exist");
  EXPECT_EQ(output_problem(dir.path()), "it is a folder; name a file");
  // A FIFO without a reader is checked without blocking.
  ASSERT_EQ(::mkfifo((dir.path() / "fifo").c_str(), 0600), 0);
  EXPECT_EQ(output_problem(dir.path() / "fifo"), std::nullopt);
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"fifo"});
}

// write_new_file never replaces: a taken name (a file, or a link to nothing) gets a number.
TEST(AtomicFile, ANewFileNeverReplacesAnything) {
  const TemporaryDirectory dir("parley-atomic-test-");
  const auto wanted = dir.path() / "rec.rttm";
  EXPECT_EQ(write_new_file(wanted, "first"), wanted);
  EXPECT_EQ(write_new_file(wanted, "second"), dir.path() / "rec-2.rttm");
  std::filesystem::create_symlink(dir.path() / "elsewhere", dir.path() / "rec-3.rttm");
  EXPECT_EQ(write_new_file(wanted, "third"), dir.path() / "rec-4.rttm");
  EXPECT_EQ(read_text(wanted), "first");
  EXPECT_EQ(read_text(dir.path() / "rec-2.rttm"), "second");
  EXPECT_EQ(read_text(dir.path() / "rec-4.rttm"), "third");
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "elsewhere"));
  EXPECT_EQ(names_in(dir.path()),
            (std::vector<std::string>{"rec-2.rttm", "rec-3.rttm", "rec-4.rttm", "rec.rttm"}));
}

}  // namespace
}  // namespace parley
