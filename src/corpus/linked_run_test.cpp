// Linking a corpus's speakers at the end of a run, with centroids the test chooses.
#include "corpus/linked_run.h"

#include <gtest/gtest.h>

#include <fstream>

#include "core/error.h"
#include "frames/segments.h"
#include "identity/centroids_test_support.h"
#include "testing/temporary_directory.h"

namespace parley::corpus {
namespace {
namespace fs = std::filesystem;

// A recording whose speaker i talks from 10 i to 10 i + 5 with centroid `centroids[i]`.
RecordingOutcome outcome_with(std::size_t index, const std::vector<std::vector<float>>& centroids) {
  pipeline::DiarizationResult result = identity::testing::result_with_centroids(centroids);
  result.duration_seconds = 10.0 * static_cast<double>(centroids.size());
  RecordingOutcome outcome;
  outcome.index = index;
  outcome.result = std::move(result);
  outcome.wall_seconds = 1.0;
  return outcome;
}

std::string read(const fs::path& path) {
  std::ifstream stream(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(stream), {}};
}

const std::vector<float> kAlice = {1, 0, 0};
const std::vector<float> kBob = {0, 1, 0};

TEST(LinkedRun, OneRecordingUnderTwoNamesLinksToOneGlobalLabel) {
  const testing::TemporaryDirectory folder("linked-run");
  LinkRequest request;
  request.speakers_table = folder / "elsewhere.tsv";
  LinkedRun run(request, nullptr, {"rttm"});
  // The same recording listed under two names (its speakers in another order the second time),
  // and one that failed.
  run.hold(0, "monday", outcome_with(0, {kAlice, kBob}));
  run.hold(1, "monday-copy", outcome_with(1, {kBob, kAlice}));
  RecordingOutcome failed;
  failed.index = 2;
  failed.error = "no audio";
  run.hold(2, "broken", std::move(failed));
  EXPECT_EQ(run.held(), 2u);
  const LinkedOutcome done = run.finish({});
  EXPECT_TRUE(done.failures.empty());
  ASSERT_EQ(done.linking.speakers.size(), 2u);
  EXPECT_EQ(done.linking.label(0, 0), done.linking.label(1, 1));
  EXPECT_EQ(done.linking.label(0, 1), done.linking.label(1, 0));
  ASSERT_EQ(done.texts.size(), 2u);
  EXPECT_EQ(done.texts.at(0),
            "SPEAKER call 1 0.000 5.000 <NA> <NA> GLOBAL_00 <NA> <NA>\n"
            "SPEAKER call 1 10.000 5.000 <NA> <NA> GLOBAL_01 <NA> <NA>\n");
  EXPECT_EQ(done.texts.at(1),
            "SPEAKER call 1 0.000 5.000 <NA> <NA> GLOBAL_01 <NA> <NA>\n"
            "SPEAKER call 1 10.000 5.000 <NA> <NA> GLOBAL_00 <NA> <NA>\n");
  // The table went where it was asked to, and lists both names of the recording.
  EXPECT_EQ(read(folder / "elsewhere.tsv"), done.table);
  EXPECT_NE(done.table.find("GLOBAL_00\t\t2\t10.000\t\t\tmonday,monday-copy\n"), std::string::npos)
      << done.table;
}

TEST(LinkedRun, ALibraryNameWinsAndCarriesItsScores) {
  LinkRequest request;
  request.candidates = {{"Alice", {kAlice}}};
  request.exclusive = true;
  LinkedRun run(request, nullptr, {"txt"});
  run.hold(0, "one", outcome_with(0, {kAlice, kBob}));
  run.hold(1, "two", outcome_with(1, {kBob, kAlice}));
  const LinkedOutcome done = run.finish({});
  EXPECT_EQ(done.texts.at(1), "0.000 5.000 GLOBAL_01\n10.000 15.000 Alice (1.00)\n");
  EXPECT_NE(done.table.find("Alice\tAlice\t2\t"), std::string::npos) << done.table;
}

TEST(LinkedRun, ARefusedWriteFailsThatRecordingAlone) {
  const testing::TemporaryDirectory folder("linked-run");
  const fs::path audio = folder / "a.wav";
  std::ofstream(audio, std::ios::binary) << "not really audio";
  OutDirRequest out;
  out.out_dir = folder / "out";
  out.formats = {"rttm", "json"};
  const OutDirWriter writer(out, {{"step", 1.0}});
  LinkRequest request;
  request.speakers_table = folder / "out" / "speakers.tsv";
  LinkedRun run(request, &writer, {});
  run.hold(0, "good", outcome_with(0, {kAlice, kBob}), writer.plan("good", audio));
  run.hold(1, "bad", outcome_with(1, {kBob, kAlice}), writer.plan("bad", audio));
  // A folder where the second recording's json goes: that write is refused.
  fs::create_directories(folder / "out" / "bad.json");
  const LinkedOutcome done = run.finish({});
  ASSERT_EQ(done.failures.size(), 1u);
  EXPECT_EQ(done.failures[0].first, 1u);
  EXPECT_NE(read(folder / "out" / "good.rttm").find(" GLOBAL_01 "), std::string::npos);
  EXPECT_NE(read(folder / "out" / "good.json").find("\"speaker_linking\""), std::string::npos);
  EXPECT_TRUE(fs::is_regular_file(folder / "out" / "speakers.tsv"));
  EXPECT_TRUE(done.texts.empty());
}

TEST(LinkedRun, WithoutAFolderItWritesOneFormat) {
  EXPECT_THROW(LinkedRun({}, nullptr, {"rttm", "json"}), Error);
}

}  // namespace
}  // namespace parley::corpus
