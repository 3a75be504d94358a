#include "transcript/recognizer_process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "core/error.h"
#include "testing/temporary_directory.h"

namespace parley::transcript {
namespace {

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// TMPDIR pointed at a folder of this test's own while it lives: ctest runs the tests of this file
// side by side, and counting parley-asr-* in the shared /tmp would see the others' folders.
class PrivateTmpdir {
 public:
  PrivateTmpdir() {
    if (const char* previous = std::getenv("TMPDIR")) previous_ = previous;
    ::setenv("TMPDIR", folder_.path().c_str(), 1);
  }
  ~PrivateTmpdir() {
    if (previous_) {
      ::setenv("TMPDIR", previous_->c_str(), 1);
    } else {
      ::unsetenv("TMPDIR");
    }
  }
  PrivateTmpdir(const PrivateTmpdir&) = delete;
  PrivateTmpdir& operator=(const PrivateTmpdir&) = delete;

 private:
  parley::testing::TemporaryDirectory folder_{"recognizer-tmp"};
  std::optional<std::string> previous_;
};

// The folders parley-asr-* in the temporary directory, to see that none is left behind.
int recognizer_folders() {
  int count = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::temp_directory_path())) {
    if (entry.path().filename().string().rfind("parley-asr-", 0) == 0) ++count;
  }
  return count;
}

TEST(RecognizerProcess, SplitsTheCommandIntoWordsAndSubstitutesEachOnce) {
  EXPECT_EQ(recognizer_arguments("asr -f {audio} -o {out}.json", "/a b/it's.wav", "/o"),
            (std::vector<std::string>{"asr", "-f", "/a b/it's.wav", "-o", "/o.json"}));
  EXPECT_EQ(recognizer_arguments(R"(asr  'x {audio}' "q\"{out}" a\ b)", "{out}$(x)", "O"),
            (std::vector<std::string>{"asr", "x {out}$(x)", "q\"O", "a b"}));
  EXPECT_NE(error_of([] { recognizer_arguments("asr", "a.wav", "o"); }).find("{audio}"),
            std::string::npos);
  EXPECT_NE(error_of([] { recognizer_arguments("asr '{audio}", "a.wav", "o"); }).find("not closed"),
            std::string::npos);
}

// Hostile file names reach the recognizer as the exact arguments, and no shell ever parses them.
TEST(RecognizerProcess, HostileFileNamesAreOnlyNames) {
  const parley::testing::TemporaryDirectory scratch("recognizer-test");
  const auto pwned = std::filesystem::current_path() / "PWNED";
  std::filesystem::remove(pwned);
  for (const std::string name : {"a{out}$(touch PWNED).wav", "it's \"quoted\" `touch PWNED`.wav",
                                 "sp ace\nnew;line.wav", "{audio}'; touch PWNED; '.wav"}) {
    const auto audio = scratch.path() / name;
    RecognizerProcess process(
        R"(/bin/sh -c 'printf "%s|" "$@" > "$0.txt"' {out} {audio} "x {audio} y")", audio);
    const auto transcript = process.wait(std::chrono::seconds(10));
    EXPECT_EQ(read_text(transcript), audio.string() + "|x " + audio.string() + " y|") << name;
    EXPECT_FALSE(std::filesystem::exists(pwned)) << name;
    EXPECT_FALSE(std::filesystem::exists(scratch.path() / "PWNED")) << name;
  }
}

TEST(RecognizerProcess, FindsTheTranscriptItWroteAndRemovesItsFolder) {
  const PrivateTmpdir tmpdir;
  const int before = recognizer_folders();
  {
    RecognizerProcess process(
        "sh -c 'printf \"1\\n00:00:00,000 --> 00:00:01,000\\nhi\\n\" > \"$0.srt\"' {out} {audio}",
        "/x/talk.wav");
    const auto transcript = process.wait(std::chrono::seconds(10));
    EXPECT_EQ(transcript.filename(), "talk.srt");
    EXPECT_NE(read_text(transcript).find("hi"), std::string::npos);
    EXPECT_EQ(recognizer_folders(), before + 1);
  }
  EXPECT_EQ(recognizer_folders(), before);
}

TEST(RecognizerProcess, ReportsExitStatusMissingCommandAndNoOutput) {
  const PrivateTmpdir tmpdir;
  const int before = recognizer_folders();
  EXPECT_NE(error_of([] {
              RecognizerProcess("sh -c 'exit 3' {audio}", "x.wav").wait({});
            }).find("exit status 3"),
            std::string::npos);
  const std::string missing =
      error_of([] { RecognizerProcess("/nonexistent/whisper-cli {audio}", "x.wav"); });
  EXPECT_NE(missing.find("not found"), std::string::npos) << missing;
  EXPECT_NE(
      error_of([] { RecognizerProcess("no-such-recognizer-xyz {audio}", "x.wav"); }).find("PATH"),
      std::string::npos);
  EXPECT_NE(error_of([] {
              RecognizerProcess("true {audio}", "x.wav").wait({});
            }).find("wrote no transcript"),
            std::string::npos);
  EXPECT_EQ(recognizer_folders(), before);  // every error path removed its folder
}

TEST(RecognizerProcess, StopsARecognizerThatTakesTooLong) {
  const auto start = std::chrono::steady_clock::now();
  const std::string message = error_of([&] {
    RecognizerProcess("sh -c 'sleep 30' {audio}", "x.wav").wait(std::chrono::milliseconds(300));
  });
  EXPECT_NE(message.find("still running"), std::string::npos) << message;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

// parley killed by SIGINT or SIGTERM while the recognizer runs takes the recognizer (and the
// children it started) and its folder with it.
TEST(RecognizerProcess, AnInterruptStopsTheRecognizerAndRemovesItsFolder) {
  const PrivateTmpdir tmpdir;
  for (const int signal_number : {SIGINT, SIGTERM}) {
    const parley::testing::TemporaryDirectory scratch("recognizer-test");
    const auto pid_file = scratch.path() / "pids";
    const int before = recognizer_folders();
    const pid_t parley = ::fork();
    ASSERT_GE(parley, 0);
    if (parley == 0) {
      // The child plays parley: start a recognizer whose own child sleeps, then get interrupted.
      RecognizerProcess process(
          "sh -c 'sleep 60 & echo $$ $! > \"$0.tmp\"; mv \"$0.tmp\" \"$0\"; "
          "wait' " +
              pid_file.string() + " {audio}",
          "x.wav");
      for (int tries = 0; tries < 500 && !std::filesystem::exists(pid_file); ++tries) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      ::raise(signal_number);
      ::_exit(0);  // not reached: the signal ends the process
    }
    int status = 0;
    ASSERT_EQ(::waitpid(parley, &status, 0), parley);
    ASSERT_TRUE(WIFSIGNALED(status)) << "parley should end by the signal";
    EXPECT_EQ(WTERMSIG(status), signal_number);
    std::istringstream pids(read_text(pid_file));
    pid_t shell = 0, sleeper = 0;
    pids >> shell >> sleeper;
    ASSERT_GT(shell, 0);
    ASSERT_GT(sleeper, 0);
    // The sleeper is reparented; a zombie (its new parent has not reaped it yet) has stopped.
    const auto stopped = [](pid_t pid) {
      std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
      std::string pid_text, command, state;
      stat >> pid_text >> command >> state;
      return ::kill(pid, 0) != 0 || state == "Z" || state.empty();
    };
    bool gone = false;
    for (int tries = 0; tries < 200 && !gone; ++tries) {
      gone = stopped(sleeper) && stopped(shell);
      if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_TRUE(gone) << "the recognizer's child " << sleeper << " still runs";
    ::kill(sleeper, SIGKILL);
    EXPECT_EQ(recognizer_folders(), before);
  }
}

}  // namespace
}  // namespace parley::transcript
