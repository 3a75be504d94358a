#include "identity/evaluation.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "frames/segments.h"

namespace parley::identity {
namespace {

TEST(IdentityEvaluation, EqualErrorRateOfSeparableAndOverlappingScores) {
  const std::vector<double> targets = {0.8, 0.9, 0.7};
  const std::vector<double> nontargets = {0.1, 0.2, 0.3};
  const auto separable = equal_error_rate(targets, nontargets);
  EXPECT_EQ(separable.rate, 0.0);
  EXPECT_GT(separable.threshold, 0.3);
  EXPECT_LE(separable.threshold, 0.7);
  // One target below one non-target out of four each: 25 % either way at 0.5.
  const std::vector<double> t = {0.4, 0.6, 0.7, 0.8};
  const std::vector<double> n = {0.1, 0.2, 0.3, 0.65};
  const auto overlapping = equal_error_rate(t, n);
  EXPECT_DOUBLE_EQ(overlapping.rate, 0.25);
  EXPECT_THROW(equal_error_rate(t, {}), Error);
}

TEST(IdentityEvaluation, TalliesMappedClusters) {
  // Two clusters: SPEAKER_00 speaks where Alice does, SPEAKER_01 where Carol (not enrolled) does.
  pipeline::DiarizationResult result;
  result.uri = "r";
  result.speaker_embeddings = NdArray<float>({2, 2}, std::vector<float>{1, 0, 0, 1});
  result.turns = {{0, 10, "SPEAKER_00", 0, 0}, {10, 20, "SPEAKER_01", 1, 1}};
  result.exclusive_turns = result.turns;
  const std::vector<eval::Turn> reference = {{"r", 0, 10, "Alice"}, {"r", 10, 10, "Carol"}};
  const std::vector<Candidate> library = {{"Alice", {{1, 0.1f}}}, {"Bob", {{0.6f, 0.8f}}}};
  IdentificationTally tally;
  tally_recording(tally, result, reference, library, {"Alice", "Bob"}, 0.5);
  EXPECT_EQ(tally.clusters, 2u);
  // SPEAKER_00 named Alice: right. SPEAKER_01 (Carol) scores 0.8 with Bob and is named Bob:
  // wrong, Carol is not enrolled.
  EXPECT_EQ(tally.correct, 1u);
  EXPECT_EQ(tally.target_scores.size(), 1u);
  EXPECT_EQ(tally.nontarget_scores.size(), 3u);
  tally_recording(tally, result, reference, library, {"Alice", "Bob"}, 0.9);
  EXPECT_EQ(tally.clusters, 4u);
  EXPECT_EQ(tally.correct, 3u);  // at 0.9 Carol stays unnamed
  EXPECT_DOUBLE_EQ(tally.accuracy(), 0.75);
}

}  // namespace
}  // namespace parley::identity
