#include "core/trace.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "core/temporary_directory.h"

namespace parley {
namespace {

// Every event of `trace` whose phase is `phase`.
std::vector<nlohmann::json> events_of(const nlohmann::json& trace, std::string_view phase) {
  std::vector<nlohmann::json> found;
  for (const auto& event : trace.at("traceEvents")) {
    if (event.at("ph") == phase) found.push_back(event);
  }
  return found;
}

TEST(TraceEvents, NothingIsRecordedWithoutALane) {
  TraceRecorder recorder;
  {
    TraceSpan span("decode");
    EXPECT_FALSE(span);
  }
  {
    // An empty lane bound (what a run without a trace binds) records nothing either.
    TraceLaneBinding binding(TraceLane{}, "decoder 0");
    TraceSpan span("decode");
    EXPECT_FALSE(span);
    EXPECT_FALSE(current_trace_lane());
  }
  EXPECT_EQ(recorder.event_count(), 0u);
}

TEST(TraceEvents, SpansLandOnTheBoundLaneWithTheirRecordings) {
  TraceRecorder recorder;
  const std::vector<std::string> group = {"a.wav", "b.wav"};
  {
    TraceLaneBinding binding(TraceLane{&recorder, 3, kTraceNetworksTrack, &group},
                             "engine 2 networks");
    TraceSpan outer("networks");
    ASSERT_TRUE(outer);
    {
      TraceSpan inner("embedding");
      inner.args().recordings = {"b.wav"};
      inner.args().number("chunks", 32);
    }
    {
      // Nested bindings come back to the outer one.
      TraceLaneBinding worker(current_trace_lane().on_track(kTraceSegmentationWorkerTrack + 1),
                              "segmentation worker 1");
      TraceSpan call("segmentation call", kTraceModel);
    }
    EXPECT_EQ(current_trace_lane().tid, kTraceNetworksTrack);
  }
  EXPECT_FALSE(current_trace_lane());
  const nlohmann::json trace = recorder.to_json();
  const auto complete = events_of(trace, "X");
  ASSERT_EQ(complete.size(), 3u);
  // In the order they ended.
  EXPECT_EQ(complete[0].at("name"), "embedding");
  EXPECT_EQ(complete[0].at("args").at("recording"), "b.wav");
  EXPECT_EQ(complete[0].at("args").at("chunks"), 32.0);
  EXPECT_EQ(complete[1].at("name"), "segmentation call");
  EXPECT_EQ(complete[1].at("cat"), "model");
  EXPECT_EQ(complete[1].at("tid"), kTraceSegmentationWorkerTrack + 1);
  EXPECT_EQ(complete[1].at("args").at("recordings"), nlohmann::json({"a.wav", "b.wav"}));
  EXPECT_EQ(complete[2].at("name"), "networks");
  EXPECT_EQ(complete[2].at("pid"), 3);
  // The outer span holds the inner ones.
  const double outer_start = complete[2].at("ts");
  const double outer_end = outer_start + complete[2].at("dur").get<double>();
  for (std::size_t k = 0; k < 2; ++k) {
    EXPECT_GE(complete[k].at("ts").get<double>(), outer_start);
    EXPECT_LE(complete[k].at("ts").get<double>() + complete[k].at("dur").get<double>(),
              outer_end + 1e-3);
  }
  std::set<std::string> names;
  for (const auto& metadata : events_of(trace, "M")) {
    if (metadata.at("name") == "thread_name") names.insert(metadata.at("args").at("name"));
  }
  EXPECT_EQ(names, (std::set<std::string>{"engine 2 networks", "segmentation worker 1"}));
}

TEST(TraceEvents, AsynchronousSpansCountersAndTheFile) {
  TraceRecorder recorder;
  const Clock::time_point start = Clock::now();
  const Clock::time_point end = start + std::chrono::milliseconds(3);
  TraceArgs args;
  args.recordings = {"a.wav"};
  recorder.span("waiting for an engine", kTraceWait, kTraceCorpusProcess, 7, start, end,
                std::move(args));
  recorder.counter("decoded recordings waiting", kTraceCorpusProcess, start, 2);
  recorder.name_process(1, "engine 0", "device gpu 0");
  recorder.name_process(1, "engine 0 again", "device gpu 1");  // the first name stays
  // Threads append at once.
  std::vector<std::jthread> threads;
  for (std::uint32_t t = 0; t < 4; ++t) {
    threads.emplace_back([&recorder, t] {
      TraceLaneBinding binding(
          TraceLane{&recorder, kTraceCorpusProcess, kTraceDecoderTrack + t, nullptr});
      for (int k = 0; k < 100; ++k) TraceSpan span("decode");
    });
  }
  threads.clear();
  EXPECT_EQ(recorder.event_count(), 2u + 400u);

  const TemporaryDirectory directory("trace");
  const auto path = directory.path() / "trace.json";
  recorder.write(path);
  std::ifstream stream(path);
  const nlohmann::json trace = nlohmann::json::parse(stream);
  EXPECT_EQ(trace.at("displayTimeUnit"), "ms");
  const auto begins = events_of(trace, "b");
  const auto ends = events_of(trace, "e");
  ASSERT_EQ(begins.size(), 1u);
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(begins[0].at("id"), ends[0].at("id"));
  EXPECT_EQ(begins[0].at("name"), ends[0].at("name"));
  EXPECT_NEAR(ends[0].at("ts").get<double>() - begins[0].at("ts").get<double>(), 3000.0, 1e-6);
  const auto counters = events_of(trace, "C");
  ASSERT_EQ(counters.size(), 1u);
  EXPECT_EQ(counters[0].at("args").at("value"), 2.0);
  std::size_t process_names = 0;
  for (const auto& metadata : events_of(trace, "M")) {
    if (metadata.at("name") == "process_name") {
      ++process_names;
      EXPECT_EQ(metadata.at("args").at("name"), "engine 0");
    }
    if (metadata.at("name") == "process_labels") {
      EXPECT_EQ(metadata.at("args").at("labels"), "device gpu 0");
    }
  }
  EXPECT_EQ(process_names, 1u);
  EXPECT_EQ(events_of(trace, "X").size(), 400u);
}

}  // namespace
}  // namespace parley
