#include "core/atomic_file.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>

#include <algorithm>
#include <fstream>
#include <sstream>
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

std::string error_of(const std::filesystem::path& path, const std::string& bytes) {
  try {
    write_file_atomically(path, bytes);
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
  EXPECT_NE(error_of(dir.path(), "x").find("Is a directory"), std::string::npos);
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"folder"});
}

}  // namespace
}  // namespace parley
