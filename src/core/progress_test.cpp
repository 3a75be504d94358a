#include "core/progress.h"

#include <gtest/gtest.h>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <thread>

#include "core/stage_timer.h"

namespace parley {
namespace {

std::string drain(std::FILE* file) {
  std::rewind(file);
  std::string text;
  char buffer[256];
  while (std::fgets(buffer, sizeof buffer, file) != nullptr) text += buffer;
  return text;
}

TEST(Progress, DrawsStagesWhenForced) {
  std::FILE* sink = std::tmpfile();
  ASSERT_NE(sink, nullptr);
  {
    Progress progress(Progress::Mode::kAlways, sink);
    progress.begin("segmentation", 10);
    progress.update(5);
    progress.end();
  }
  const std::string text = drain(sink);
  std::fclose(sink);
  EXPECT_NE(text.find("segmentation"), std::string::npos);
  EXPECT_NE(text.find("10/10"), std::string::npos);
}

std::size_t count(const std::string& text, const std::string& part) {
  std::size_t found = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++found;
  return found;
}

// "100% 16/16 46.9s 0.13 h 10x    10x": a shorter line left the end of a longer one behind.
TEST(Progress, EachDrawErasesTheRestOfTheLine) {
  std::FILE* sink = std::tmpfile();
  ASSERT_NE(sink, nullptr);
  {
    Progress progress(Progress::Mode::kAlways, sink);
    progress.begin("recordings", 2);
    progress.update(1, std::string(120, 'x'));
    progress.end();
  }
  const std::string text = drain(sink);
  std::fclose(sink);
  EXPECT_EQ(count(text, "\r"), count(text, "\x1b[K")) << text;
  EXPECT_GE(count(text, "\x1b[K"), 2u) << text;
}

// The line sat still between completions (13 s at 0/382 on a long file): it is drawn again with
// the time that has passed.
TEST(Progress, RedrawsOnATimerWithoutUpdates) {
  std::FILE* sink = std::tmpfile();
  ASSERT_NE(sink, nullptr);
  {
    Progress progress(Progress::Mode::kAlways, sink, std::chrono::milliseconds(20));
    progress.begin("recordings", 382);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    progress.end();
  }
  const std::string text = drain(sink);
  std::fclose(sink);
  EXPECT_GE(count(text, "0/382"), 4u) << text;  // the first draw and the timer's
}

// A log line written while the line is drawn starts on a cleared line and ends with a newline of
// its own; the progress line comes back below it.
TEST(Progress, LogLinesGoAboveTheProgressLine) {
  std::FILE* sink = std::tmpfile();
  ASSERT_NE(sink, nullptr);
  {
    Progress progress(Progress::Mode::kAlways, sink);
    progress.begin("recordings", 4);
    progress.update(1);
    write_above_progress(sink, [&] { std::fputs("a warning\n", sink); });
    progress.end();
  }
  const std::string text = drain(sink);
  std::fclose(sink);
  const auto warning = text.find("\r\x1b[Ka warning\n");
  ASSERT_NE(warning, std::string::npos) << text;
  EXPECT_NE(text.find("1/4", warning), std::string::npos) << text;  // drawn again below it
}

TEST(Progress, ProgressAwareSinkWritesThroughItsInnerSink) {
  std::ostringstream stream;
  auto inner = std::make_shared<spdlog::sinks::ostream_sink_mt>(stream);
  spdlog::logger logger("test", progress_aware_sink(inner, stderr));
  logger.set_pattern("%v");
  logger.warn("disk {} full", "almost");
  EXPECT_EQ(stream.str(), "disk almost full\n");
}

TEST(Progress, SilentWhenNotATerminal) {
  std::FILE* sink = std::tmpfile();
  ASSERT_NE(sink, nullptr);
  {
    Progress progress(Progress::Mode::kAuto, sink);
    EXPECT_FALSE(progress.enabled());
    progress.begin("embedding", 3);
    progress.update(1);
    progress.end();
  }
  EXPECT_TRUE(drain(sink).empty());
  std::fclose(sink);
}

TEST(StageTimes, AccumulatesInFirstSeenOrder) {
  StageTimes times;
  times.add("segmentation", 1.0);
  times.add("embedding", 2.0);
  times.add("segmentation", 0.5);
  ASSERT_EQ(times.entries().size(), 2u);
  EXPECT_EQ(times.entries()[0].first, "segmentation");
  EXPECT_DOUBLE_EQ(times.entries()[0].second, 1.5);
  EXPECT_DOUBLE_EQ(times.total(), 3.5);
  { ScopedStageTimer timer(times, "clustering"); }
  EXPECT_EQ(times.entries().size(), 3u);
}

}  // namespace
}  // namespace parley
