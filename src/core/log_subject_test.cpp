#include "core/log_subject.h"

#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

namespace parley {
namespace {

class LogSubjectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(lines_);
    logger_ = std::make_shared<spdlog::logger>("subject-test", sink);
    show_log_subjects(*logger_);
  }
  std::string logged() {
    logger_->flush();
    std::string text = lines_.str();
    lines_.str("");
    return text;
  }
  std::ostringstream lines_;
  std::shared_ptr<spdlog::logger> logger_;
};

TEST_F(LogSubjectTest, LinesNameTheRecordingTheThreadWorksOn) {
  logger_->warn("outside");
  EXPECT_NE(logged().find("] outside"), std::string::npos);
  {
    const LogSubject subject("calls/a.wav");
    EXPECT_EQ(LogSubject::current(), "calls/a.wav");
    logger_->warn("clustering: only 0 usable embedding(s)");
    EXPECT_NE(logged().find("[warning] calls/a.wav: clustering: only 0 usable embedding(s)"),
              std::string::npos);
    {
      const LogSubject inner("calls/b.wav");
      logger_->warn("inner");
      EXPECT_NE(logged().find("calls/b.wav: inner"), std::string::npos);
      const LogSubject empty("");
      EXPECT_EQ(LogSubject::current(), "calls/b.wav");
    }
    logger_->warn("again");
    EXPECT_NE(logged().find("calls/a.wav: again"), std::string::npos);
  }
  EXPECT_EQ(LogSubject::current(), "");
  logger_->warn("after");
  EXPECT_EQ(logged().find(": after"), std::string::npos);
}

TEST_F(LogSubjectTest, EachThreadHasItsOwnSubject) {
  const LogSubject subject("main.wav");
  std::thread([this] {
    EXPECT_EQ(LogSubject::current(), "");
    const LogSubject other("other.wav");
    logger_->warn("from the other thread");
  }).join();
  EXPECT_NE(logged().find("other.wav: from the other thread"), std::string::npos);
  EXPECT_EQ(LogSubject::current(), "main.wav");
}

}  // namespace
}  // namespace parley
