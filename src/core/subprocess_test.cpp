#include "core/subprocess.h"

#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "core/error.h"

namespace parley {
namespace {

class Subprocess : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("parley_subprocess_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static std::string read(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  std::filesystem::path dir_;
};

TEST_F(Subprocess, RedirectsOutputAndReportsTheExitStatus) {
  SpawnOptions options;
  options.stdout_path = dir_ / "out";
  options.stderr_path = dir_ / "err";
  const int status =
      run_process({"sh", "-c", "echo to-out; echo to-err >&2; read line; exit 3"}, options);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 3);  // `read` met end of file: standard input is /dev/null
  EXPECT_EQ(read(dir_ / "out"), "to-out\n");
  EXPECT_EQ(read(dir_ / "err"), "to-err\n");
  EXPECT_EQ(describe_wait_status(status), "exit status 3");
}

TEST_F(Subprocess, ArgumentsReachTheProgramUnquoted) {
  SpawnOptions options;
  options.stdout_path = dir_ / "out";
  const int status = run_process({"printf", "%s|", "a b", "it's", "$HOME"}, options);
  EXPECT_EQ(describe_wait_status(status), "exit status 0");
  EXPECT_EQ(read(dir_ / "out"), "a b|it's|$HOME|");
}

TEST_F(Subprocess, AMissingProgramFailsNamingIt) {
  try {
    run_process({"/nonexistent/parley-no-such-program"});
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(
        std::string(error.what()).find("program '/nonexistent/parley-no-such-program' not found"),
        std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace parley
