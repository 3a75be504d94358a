#include "core/temporary_directory.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <optional>
#include <string>

#include "core/error.h"

namespace parley {
namespace {

// Sets TMPDIR for one test and puts back what was there.
class ScopedTmpdir {
 public:
  explicit ScopedTmpdir(const std::string& value) {
    if (const char* old = std::getenv("TMPDIR")) old_ = old;
    ::setenv("TMPDIR", value.c_str(), 1);
  }
  ~ScopedTmpdir() {
    if (old_) {
      ::setenv("TMPDIR", old_->c_str(), 1);
    } else {
      ::unsetenv("TMPDIR");
    }
  }
  ScopedTmpdir(const ScopedTmpdir&) = delete;
  ScopedTmpdir& operator=(const ScopedTmpdir&) = delete;

 private:
  std::optional<std::string> old_;
};

std::string error_of(const auto& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

// TMPDIR naming a folder that does not exist gave "filesystem error: temp_directory_path".
TEST(TemporaryFolder, AMissingTmpdirSaysWhatToDo) {
  const TemporaryDirectory existing("parley-tmpdir-test-");
  const std::string missing = (existing.path() / "gone").string();
  const ScopedTmpdir tmpdir(missing);
  const std::string message = error_of([] { static_cast<void>(temporary_folder()); });
  EXPECT_NE(message.find("TMPDIR is set to '" + missing + "', which is not an existing folder"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("create that folder"), std::string::npos) << message;
  EXPECT_EQ(error_of([] { TemporaryDirectory folder("parley-tmpdir-test-"); }), message);
}

TEST(TemporaryFolder, IsTmpdirWhenItExists) {
  const TemporaryDirectory existing("parley-tmpdir-test-");
  const ScopedTmpdir tmpdir(existing.path().string());
  EXPECT_EQ(temporary_folder(), existing.path());
  const TemporaryDirectory inside("parley-tmpdir-test-");
  EXPECT_EQ(inside.path().parent_path(), existing.path());
}

}  // namespace
}  // namespace parley
