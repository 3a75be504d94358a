#include "transcript/recognizer_process.h"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>

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

TEST(RecognizerProcess, ExpandsAndQuotesPaths) {
  EXPECT_EQ(expand_recognizer_command("asr -f {audio} -o {out}", "/a b/it's.wav", "/o"),
            "asr -f '/a b/it'\\''s.wav' -o '/o'");
  EXPECT_NE(error_of([] { expand_recognizer_command("asr", "a.wav", "o"); }).find("{audio}"),
            std::string::npos);
}

TEST(RecognizerProcess, FindsTheTranscriptItWrote) {
  const parley::testing::TemporaryDirectory temp("recognizer-test");
  const auto out = temp / "ok";
  RecognizerProcess process("echo '1\n00:00:00,000 --> 00:00:01,000\nhi\n' > {out}.srt # {audio}",
                            "x.wav", out);
  auto written = out;
  written += ".srt";
  EXPECT_EQ(process.wait(std::chrono::seconds(10)), written);
}

TEST(RecognizerProcess, ReportsExitStatusMissingCommandAndNoOutput) {
  const parley::testing::TemporaryDirectory temp("recognizer-test");
  const auto out = temp / "fail";
  EXPECT_NE(error_of([&] {
              RecognizerProcess("exit 3 # {audio}", "x.wav", out).wait({});
            }).find("exit status 3"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              RecognizerProcess("/nonexistent/whisper-cli {audio}", "x.wav", out).wait({});
            }).find("not found"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              RecognizerProcess("true {audio}", "x.wav", out).wait({});
            }).find("wrote no transcript"),
            std::string::npos);
}

TEST(RecognizerProcess, StopsARecognizerThatTakesTooLong) {
  const parley::testing::TemporaryDirectory temp("recognizer-test");
  const auto out = temp / "slow";
  const auto start = std::chrono::steady_clock::now();
  const std::string message = error_of([&] {
    RecognizerProcess("sleep 30 # {audio}", "x.wav", out).wait(std::chrono::milliseconds(300));
  });
  EXPECT_NE(message.find("still running"), std::string::npos) << message;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

}  // namespace
}  // namespace parley::transcript
