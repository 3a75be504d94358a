// The plan of a run over a list: repeats, names over the whole list, shards, what an earlier run
// finished, and the JSON the C API hands out with a file name's bytes kept.
#include "corpus/run_plan.h"

#include <gtest/gtest.h>

#include <fstream>

#include "core/error.h"
#include "testing/temporary_directory.h"

namespace parley::corpus {
namespace {
namespace fs = std::filesystem;

class RunPlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = std::make_unique<testing::TemporaryDirectory>("run-plan");
    for (const char* name : {"a/talk.wav", "b/talk.wav", "a/other.wav"}) {
      fs::create_directories((*folder_ / name).parent_path());
      std::ofstream(*folder_ / name, std::ios::binary) << "not really audio";
    }
    result_.uri = "talk";
    result_.duration_seconds = 42.5;
    result_.speaker_count = 1;
    result_.turns = {{0.0, 6.0, "SPEAKER_00"}};
    result_.exclusive_turns = result_.turns;
  }

  OutDirWriter writer(double step) const {
    return OutDirWriter({*folder_ / "out", {"rttm", "json"}, false, {}}, {{"step", step}});
  }

  // a/talk.wav, b/talk.wav, a/./talk.wav (a's again), a/other.wav
  std::vector<fs::path> listed() const {
    return {*folder_ / "a/talk.wav", *folder_ / "b/talk.wav", *folder_ / "a/./talk.wav",
            *folder_ / "a/other.wav"};
  }

  std::unique_ptr<testing::TemporaryDirectory> folder_;
  pipeline::DiarizationResult result_;
};

TEST_F(RunPlanTest, LeavesRepeatsOutAndNamesOverTheWholeList) {
  const PlannedRun plan = plan_run(listed());
  ASSERT_EQ(plan.repeats.size(), 1u);
  EXPECT_EQ(plan.repeats[0].repeat, 2u);
  EXPECT_EQ(plan.repeats[0].first, 0u);
  ASSERT_EQ(plan.recordings.size(), 3u);
  EXPECT_EQ(plan.recordings[0].index, 0u);
  EXPECT_EQ(plan.recordings[1].index, 1u);
  EXPECT_EQ(plan.recordings[2].index, 3u);
  const std::vector<std::string> names =
      unique_output_names({listed()[0], listed()[1], listed()[3]});
  for (std::size_t k = 0; k < 3; ++k) EXPECT_EQ(plan.recordings[k].name, names[k]);
  EXPECT_EQ(plan.recordings[0].name.substr(0, 5), "talk-");
  EXPECT_NE(plan.recordings[0].name, plan.recordings[1].name);
  EXPECT_EQ(plan.recordings[2].name, "other");
  EXPECT_TRUE(plan.recordings[0].outputs.formats.empty());

  // A shard takes its part of the list without repeats, and names it as the whole list does.
  const PlannedRun second = plan_run(listed(), Shard::parse("2/2"));
  ASSERT_EQ(second.recordings.size(), 1u);
  EXPECT_EQ(second.recordings[0].index, 1u);
  EXPECT_EQ(second.recordings[0].name, plan.recordings[1].name);
}

TEST_F(RunPlanTest, SaysWhatAnEarlierRunFinishedWithTheSameSettings) {
  PlannedRun plan = plan_run(listed(), writer(1.0));
  ASSERT_EQ(plan.recordings.size(), 3u);
  EXPECT_EQ(plan.finished_count(), 0u);
  const PlannedRun::Recording& first = plan.recordings[0];
  ASSERT_EQ(first.outputs.formats.size(), 2u);
  EXPECT_EQ(first.outputs.formats[0].destination.output, *folder_ / "out" / (first.name + ".rttm"));
  EXPECT_EQ(first.outputs.formats[1].destination.record,
            *folder_ / "out" / ".parley" / (first.name + ".json.json"));
  writer(1.0).write(first.outputs, result_, 1.0);

  plan = plan_run(listed(), writer(1.0));
  EXPECT_EQ(plan.finished_count(), 1u);
  EXPECT_TRUE(plan.recordings[0].finished());
  EXPECT_DOUBLE_EQ(plan.recordings[0].audio_seconds(), 42.5);
  EXPECT_FALSE(plan.recordings[1].finished());
  EXPECT_DOUBLE_EQ(plan.recordings[1].audio_seconds(), 0.0);
  // Another setting: nothing is finished.
  EXPECT_EQ(plan_run(listed(), writer(2.0)).finished_count(), 0u);

  const nlohmann::ordered_json described = plan_run(listed(), writer(1.0)).describe();
  EXPECT_EQ(described["recordings"][0]["finished"], true);
  EXPECT_EQ(described["recordings"][0]["outputs"][1]["format"], "json");
  EXPECT_EQ(described["recordings"][2]["index"], 3);
  EXPECT_EQ(described["repeats"][0]["index"], 2);
  EXPECT_EQ(described["repeats"][0]["first"], 0);
}

TEST_F(RunPlanTest, JsonKeepsTheBytesOfNamesThatAreNotUtf8) {
  const nlohmann::ordered_json document = {
      {"name", std::string("caf\xE9 \"quoted\"\\\n\xC3\xA9")}, {"seconds", 1.5}, {"list", {1, 2}}};
  EXPECT_EQ(json_keeping_bytes(document),
            "{\"name\":\"caf\\udce9 \\\"quoted\\\"\\\\\\n\xC3\xA9\",\"seconds\":1.5,"
            "\"list\":[1,2]}");
  // Valid text comes out as nlohmann::json writes it.
  const nlohmann::ordered_json valid = {
      {"a", "b\tc\x01"}, {"n", nullptr}, {"t", true}, {"x", 0.25}};
  EXPECT_EQ(json_keeping_bytes(valid), valid.dump());
}

}  // namespace
}  // namespace parley::corpus
