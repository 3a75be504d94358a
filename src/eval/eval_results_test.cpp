#include "eval/eval_results.h"

#include <gtest/gtest.h>

#include <fstream>

#include "core/error.h"
#include "testing/temporary_directory.h"

namespace parley::eval {
namespace {

EvalFileResult scored(const std::string& uri, double missed, double false_alarm, double confusion,
                      double total, double audio, double wall) {
  EvalFileResult result;
  result.uri = uri;
  result.audio = uri + ".wav";
  result.ok = true;
  result.scores = {missed, false_alarm, confusion, total};
  result.audio_seconds = audio;
  result.wall_seconds = wall;
  result.stage_seconds.add("decode", 0.1 * wall);
  result.stage_seconds.add("embedding", 0.8 * wall);
  result.stage_seconds.add("clustering", 0.01 * wall);  // stage order is run order, kept in JSON
  result.speakers = 2;
  result.fingerprint = "f";
  return result;
}

// Totals are sums of seconds (as md-eval's overall line), not means of per-file percentages.
TEST(EvalResults, TotalsAreSumsOverScoredFiles) {
  std::vector<EvalFileResult> files = {scored("a", 1.0, 0.0, 0.0, 10.0, 30.0, 3.0),
                                       scored("b", 30.0, 10.0, 10.0, 100.0, 60.0, 12.0)};
  EvalFileResult failed;
  failed.uri = "c";
  failed.error = "no audio";
  files.push_back(failed);
  const EvalTotals totals = eval_totals(files);
  EXPECT_EQ(totals.files, 3u);
  EXPECT_EQ(totals.failed, 1u);
  EXPECT_DOUBLE_EQ(totals.scores.der(), 51.0 / 110.0);  // mean of rates would be 0.30
  EXPECT_DOUBLE_EQ(totals.speed(), 90.0 / 15.0);
  EXPECT_DOUBLE_EQ(totals.real_time_factor(), 15.0 / 90.0);
  ASSERT_EQ(totals.stage_seconds.entries().size(), 3u);
  EXPECT_NEAR(totals.stage_seconds.entries()[1].second, 0.8 * 15.0, 1e-12);

  EvalRun run;
  run.system = "parley test";
  run.files = files;
  const auto json = eval_run_json(run);
  EXPECT_EQ(json["schema"], kEvalSchema);
  EXPECT_DOUBLE_EQ(json["total"]["der"].get<double>(), 51.0 / 110.0);
  EXPECT_EQ(json["total"]["failed"], 1);
  EXPECT_EQ(json["total"]["scored"], 2);
  EXPECT_EQ(json["files"][2]["status"], "failed");
  EXPECT_EQ(json["files"][2]["error"], "no audio");

  const std::string table = format_eval_table(run);
  EXPECT_NE(table.find("TOTAL   46.36"), std::string::npos) << table;
  EXPECT_NE(table.find("failed: c: no audio"), std::string::npos) << table;
  EXPECT_NE(table.find("1 of 3 recordings failed"), std::string::npos) << table;
}

TEST(EvalResults, FileRecordRoundTrips) {
  const EvalFileResult original = scored("a", 1.5, 0.25, 2.0, 10.0, 30.0, 3.0);
  const EvalFileResult back = file_result_from_json(file_result_json(original), "a.json");
  EXPECT_EQ(back.uri, "a");
  EXPECT_TRUE(back.ok);
  EXPECT_DOUBLE_EQ(back.scores.missed, 1.5);
  EXPECT_DOUBLE_EQ(back.scores.false_alarm, 0.25);
  EXPECT_DOUBLE_EQ(back.scores.confusion, 2.0);
  EXPECT_DOUBLE_EQ(back.scores.total, 10.0);
  EXPECT_DOUBLE_EQ(back.speed(), 10.0);
  EXPECT_DOUBLE_EQ(back.real_time_factor(), 0.1);
  EXPECT_EQ(back.stage_seconds.entries(), original.stage_seconds.entries());
  EXPECT_EQ(back.speakers, 2u);
  EXPECT_EQ(back.fingerprint, "f");
  auto broken = file_result_json(original);
  broken.erase("wall_seconds");
  try {
    file_result_from_json(broken, "a.json");
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("a.json: missing field 'wall_seconds'"),
              std::string::npos);
  }
}

TEST(EvalResults, SettingsChanges) {
  const nlohmann::ordered_json before = {{"step", 1.0}, {"clustering", "vbx"}};
  nlohmann::ordered_json now = before;
  EXPECT_TRUE(changed_settings(before, now).empty());
  now["step"] = 2.0;
  now["embedding_mode"] = "shared";
  EXPECT_EQ(changed_settings(before, now),
            (std::vector<std::string>{"embedding_mode: (none) -> shared", "step: 1.0 -> 2.0"}));
  // A long value shows where it differs, not its whole text.
  const nlohmann::ordered_json long_before = {
      {"pipeline",
       "DiarizationConfig(step=1s, segmentation_batch=1, embedding_batch=32, "
       "exclude_overlap=true, streaming=true)"}};
  nlohmann::ordered_json long_now = long_before;
  long_now["pipeline"] =
      "DiarizationConfig(step=1s, segmentation_batch=1, embedding_batch=16, "
      "exclude_overlap=true, streaming=true)";
  EXPECT_EQ(changed_settings(long_before, long_now),
            (std::vector<std::string>{"pipeline: ...dding_batch=32, exclude_ov... -> "
                                      "...dding_batch=16, exclude_ov..."}));
}

// `parley eval` said nothing in its JSON when the speed twin made the hypotheses.
TEST(EvalResults, ASpeedTwinRunSaysSoInItsJsonAndSummary) {
  EvalRun run;
  run.system = "parley";
  run.files = {scored("a", 1.0, 0.0, 1.0, 10.0, 30.0, 2.0)};
  EXPECT_EQ(eval_run_json(run)["speed_twin"], false);
  EXPECT_FALSE(eval_run_json(run).contains("warning"));
  run.speed_twin = true;
  const nlohmann::ordered_json written = eval_run_json(run);
  EXPECT_EQ(written["speed_twin"], true);
  EXPECT_NE(written["warning"].get<std::string>().find("speed twin"), std::string::npos);
  EXPECT_TRUE(system_summary(run).speed_twin);
  const parley::testing::TemporaryDirectory temp("eval-results-test");
  const auto path = temp / "twin.json";
  std::ofstream(path) << written.dump(2);
  EXPECT_TRUE(read_system_summary(path).speed_twin);
}

TEST(EvalResults, SystemSummaryFromAWrittenFile) {
  EvalRun run;
  run.system = "peer";
  run.files = {scored("a", 1.0, 0.0, 1.0, 10.0, 30.0, 2.0)};
  const parley::testing::TemporaryDirectory temp("eval-results-test");
  const auto path = temp / "summary.json";
  std::ofstream(path) << eval_run_json(run).dump(2);
  const SystemSummary summary = read_system_summary(path);
  EXPECT_EQ(summary.system, "peer");
  EXPECT_DOUBLE_EQ(summary.der, 0.2);
  EXPECT_DOUBLE_EQ(summary.speed, 15.0);
  ASSERT_EQ(summary.stage_seconds.entries().size(), 3u);
  EXPECT_EQ(summary.stage_seconds.entries()[2].first, "clustering");
  const nlohmann::ordered_json written = eval_run_json(run);
  EXPECT_EQ(written["schema"], "parley-eval/2");
  EXPECT_DOUBLE_EQ(written["total"]["real_time_factor"].get<double>(), 2.0 / 30.0);
  EXPECT_DOUBLE_EQ(written["files"][0]["speed"].get<double>(), 15.0);
  // The minimum a peer needs to write: system and total der, and speed or real-time factor.
  std::ofstream(path, std::ios::trunc)
      << R"({"system": "sherpa", "total": {"der": 0.3, "speed": 40}})";
  EXPECT_DOUBLE_EQ(read_system_summary(path).speed, 40.0);
  std::ofstream(path, std::ios::trunc)
      << R"({"system": "sherpa", "total": {"der": 0.3, "real_time_factor": 0.025}})";
  EXPECT_DOUBLE_EQ(read_system_summary(path).speed, 40.0);
  // parley-eval/1's "rtf" meant speed, the opposite of everyone else's real-time factor: refused.
  std::ofstream(path, std::ios::trunc) << R"({"system": "old", "total": {"der": 0.3, "rtf": 40}})";
  EXPECT_THROW(read_system_summary(path), Error);
  std::ofstream(path) << R"({"system": "x"})";
  EXPECT_THROW(read_system_summary(path), Error);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace parley::eval
