#include "eval/der.h"

#include <cmath>

#include <gtest/gtest.h>

#include "core/error.h"
#include "eval/der_report.h"
#include "eval/uem.h"
#include "testing/shared_data.h"

namespace parley::eval {
namespace {

std::vector<Turn> turns(std::initializer_list<std::tuple<double, double, const char*>> spans) {
  std::vector<Turn> result;
  for (const auto& [start, end, speaker] : spans) {
    result.push_back({"f", start, end - start, speaker});
  }
  return result;
}

FileScore score(const std::vector<Turn>& ref, const std::vector<Turn>& hyp,
                ScoringOptions options = {}, const Timeline* uem = nullptr) {
  return score_file("f", ref, hyp, uem, options);
}

TEST(Der, RelabelledPerfectHypothesisScoresZero) {
  const auto ref = turns({{0, 10, "A"}, {8, 15, "B"}, {15, 20, "A"}});
  const auto hyp = turns({{0, 10, "s2"}, {8, 15, "s1"}, {15, 20, "s2"}});
  const FileScore result = score(ref, hyp);
  EXPECT_DOUBLE_EQ(result.times.total, 22.0);
  EXPECT_DOUBLE_EQ(result.times.error(), 0.0);
  EXPECT_EQ(result.speaker_mapping.at("A"), "s2");
  EXPECT_EQ(result.speaker_mapping.at("B"), "s1");
}

TEST(Der, ConfusionAfterOptimalMapping) {
  const auto ref = turns({{0, 10, "A"}, {10, 20, "B"}});
  const auto hyp = turns({{0, 12, "x"}, {12, 20, "y"}});
  const ErrorTimes times = score(ref, hyp).times;
  EXPECT_DOUBLE_EQ(times.total, 20.0);
  EXPECT_DOUBLE_EQ(times.confusion, 2.0);
  EXPECT_DOUBLE_EQ(times.missed, 0.0);
  EXPECT_DOUBLE_EQ(times.false_alarm, 0.0);
  EXPECT_DOUBLE_EQ(times.der(), 0.1);
}

TEST(Der, MissedAndFalseAlarmDependOnTheImplicitRegion) {
  const auto ref = turns({{0, 10, "A"}});
  const auto hyp = turns({{5, 15, "x"}});
  // pyannote.metrics and dscore score from the first to the last turn of either side...
  const ErrorTimes both = score(ref, hyp).times;
  EXPECT_DOUBLE_EQ(both.missed, 5.0);
  EXPECT_DOUBLE_EQ(both.false_alarm, 5.0);
  EXPECT_DOUBLE_EQ(both.der(), 1.0);
  // ...md-eval.pl without a UEM only over the reference's extent.
  ScoringOptions md_eval;
  md_eval.implicit_uem = ImplicitUem::reference;
  const ErrorTimes reference_only = score(ref, hyp, md_eval).times;
  EXPECT_DOUBLE_EQ(reference_only.false_alarm, 0.0);
  EXPECT_DOUBLE_EQ(reference_only.der(), 0.5);
}

TEST(Der, UemLimitsScoring) {
  const auto ref = turns({{0, 10, "A"}, {10, 20, "B"}});
  const auto hyp = turns({{0, 20, "x"}});
  const Timeline uem = {{5, 12}, {18, 30}};
  const ErrorTimes times = score(ref, hyp, {}, &uem).times;
  EXPECT_DOUBLE_EQ(times.total, 9.0);      // A's [5, 10) and B's [10, 12) and [18, 20)
  EXPECT_DOUBLE_EQ(times.confusion, 4.0);  // B's [10, 12) and [18, 20) are given to A's x
}

TEST(Der, CollarIsRemovedOnEachSideOfReferenceBoundaries) {
  const auto ref = turns({{0, 10, "A"}, {10, 20, "B"}});
  const auto hyp = turns({{0, 11, "x"}, {11, 20, "y"}});
  ScoringOptions options;
  options.collar = 0.5;
  const ErrorTimes times = score(ref, hyp, options).times;
  // Scored: [0.5, 9.5) and [10.5, 19.5).
  EXPECT_DOUBLE_EQ(times.total, 18.0);
  EXPECT_DOUBLE_EQ(times.confusion, 0.5);
  EXPECT_DOUBLE_EQ(times.der(), 0.5 / 18.0);
}

TEST(Der, OverlapCountsEverySpeakerUnlessSkipped) {
  const auto ref = turns({{0, 10, "A"}, {6, 15, "B"}});
  const auto hyp = turns({{0, 15, "x"}});
  const ErrorTimes strict = score(ref, hyp).times;
  EXPECT_DOUBLE_EQ(strict.total, 19.0);
  EXPECT_DOUBLE_EQ(strict.missed, 4.0);
  EXPECT_DOUBLE_EQ(strict.confusion, 5.0);
  ScoringOptions options;
  options.skip_overlap = true;
  const ErrorTimes skipped = score(ref, hyp, options).times;
  EXPECT_DOUBLE_EQ(skipped.total, 11.0);
  EXPECT_DOUBLE_EQ(skipped.missed, 0.0);
  EXPECT_DOUBLE_EQ(skipped.confusion, 5.0);
}

// md-eval.pl skips a stretch where one reference speaker's turns overlap each other, like one
// where two speakers talk (checked against md-eval in md_eval_agreement_test.cpp); parley skipped
// only the latter (53.33 % where md-eval said 50.00 %).
TEST(Der, SkipOverlapAlsoSkipsASpeakersOverlappingTurns) {
  const auto ref = turns({{0, 6, "A"}, {4, 10, "A"}, {8, 12, "B"}});
  const auto hyp = turns({{0, 12, "x"}});
  ScoringOptions options;
  options.skip_overlap = true;
  const ErrorTimes skipped = score(ref, hyp, options).times;
  EXPECT_DOUBLE_EQ(skipped.total, 8.0);  // 4-6 (A with A) and 8-10 (A with B) are skipped
  EXPECT_DOUBLE_EQ(skipped.confusion, 2.0);
}

// ami-debug's UEMs give the channel as NA. md-eval.pl matches UEM lines to the RTTM's channel
// (1), so it ignores such a UEM and scores everything; parley, like pyannote.metrics and dscore,
// ignores the channel and applies it. A documented difference (docs/reliability.md).
TEST(Der, UemLinesApplyWhateverTheirChannel) {
  const auto ref = turns({{0, 6, "A"}, {8, 12, "B"}});
  const auto hyp = turns({{0, 12, "x"}});
  const Uem uem = parse_uem("f NA 0 6\n", "na.uem");
  const ErrorTimes times = score(ref, hyp, ScoringOptions{}, &uem.at("f")).times;
  EXPECT_DOUBLE_EQ(times.total, 6.0);
}

TEST(Der, SpeakersAreMappedBeforeCollarsAreRemovedAsInMdEval) {
  // Over the whole file x shares 3 s with A and y 2.5 s, so A -> x. Inside the scored region
  // (collar 1 s) y would share more; md-eval.pl keeps the mapping made on the whole region
  // (checked by hand with md-eval.pl -c 1: DER 87.50 %, missed 4.50 s, confusion 2.50 s).
  const auto ref = turns({{0, 10, "A"}});
  const auto hyp = turns({{0, 1.5, "x"}, {8.5, 10, "x"}, {1.5, 4, "y"}});
  ScoringOptions options;
  options.collar = 1.0;
  const FileScore result = score(ref, hyp, options);
  EXPECT_EQ(result.speaker_mapping.at("A"), "x");
  EXPECT_DOUBLE_EQ(result.times.total, 8.0);
  EXPECT_DOUBLE_EQ(result.times.missed, 4.5);
  EXPECT_DOUBLE_EQ(result.times.confusion, 2.5);
  EXPECT_DOUBLE_EQ(result.times.der(), 0.875);
}

TEST(Der, SelfOverlappingTurnsOfOneSpeakerCountOnce) {
  const auto ref = turns({{0, 6, "A"}, {4, 10, "A"}});
  const auto hyp = turns({{0, 10, "x"}, {2, 3, "x"}});
  const ErrorTimes times = score(ref, hyp).times;
  EXPECT_DOUBLE_EQ(times.total, 10.0);
  EXPECT_DOUBLE_EQ(times.error(), 0.0);
}

TEST(Der, EmptyHypothesisIsAllMissed) {
  const ErrorTimes times = score(turns({{1, 4, "A"}, {2, 3, "B"}}), {}).times;
  EXPECT_DOUBLE_EQ(times.total, 4.0);
  EXPECT_DOUBLE_EQ(times.missed, 4.0);
  EXPECT_DOUBLE_EQ(times.der(), 1.0);
}

TEST(Der, NoScoredSpeechGivesZeroOrFullRate) {
  ErrorTimes times;
  EXPECT_DOUBLE_EQ(times.der(), 0.0);
  times.false_alarm = 2.0;
  EXPECT_DOUBLE_EQ(times.der(), 1.0);
}

// A 1e-320 s reference turn (a denormal) made DER "inf" and JSON null; it is scored as an empty
// reference is: 0 without hypothesis speech, 100 % with it.
TEST(Der, DenormalReferenceIsScoredAsNoReferenceSpeech) {
  const auto tiny = turns({{0, 1e-320, "A"}});
  const ErrorTimes alone = score(tiny, {}).times;
  EXPECT_DOUBLE_EQ(alone.der(), 0.0);
  const ErrorTimes with_speech = score(tiny, turns({{0, 5, "x"}})).times;
  EXPECT_TRUE(std::isfinite(with_speech.der()));
  EXPECT_DOUBLE_EQ(with_speech.der(), 1.0);
  EXPECT_DOUBLE_EQ(with_speech.rate(with_speech.false_alarm), 1.0);
  ErrorTimes denormal;
  denormal.total = 1e-320;
  denormal.missed = 1e-320;
  EXPECT_DOUBLE_EQ(denormal.der(), 0.0);
}

TEST(Der, ConventionsAreOneNameAway) {
  EXPECT_DOUBLE_EQ(scoring_options(parse_convention("strict")).collar, 0.0);
  EXPECT_FALSE(scoring_options(Convention::strict).skip_overlap);
  EXPECT_DOUBLE_EQ(scoring_options(parse_convention("voxconverse")).collar, 0.25);
  EXPECT_FALSE(scoring_options(Convention::voxconverse).skip_overlap);
  EXPECT_DOUBLE_EQ(scoring_options(parse_convention("lenient")).collar, 0.25);
  EXPECT_TRUE(scoring_options(Convention::lenient).skip_overlap);
  EXPECT_THROW(parse_convention("forgiving"), Error);
  EXPECT_EQ(convention_name(Convention::voxconverse), "voxconverse");
}

TEST(Der, CorpusTotalsAndFileBookkeeping) {
  std::vector<Turn> ref = {{"a", 0, 10, "A"}, {"b", 0, 10, "B"}};
  std::vector<Turn> hyp = {{"a", 0, 5, "x"}, {"c", 0, 3, "y"}};
  const DerReport report = score_diarization(ref, hyp, nullptr, {});
  ASSERT_EQ(report.files.size(), 2u);
  EXPECT_EQ(report.files[0].file_id, "a");
  EXPECT_DOUBLE_EQ(report.files[0].times.missed, 5.0);
  EXPECT_DOUBLE_EQ(report.files[1].times.missed, 10.0);  // no hypothesis for b at all
  EXPECT_DOUBLE_EQ(report.overall.total, 20.0);
  EXPECT_DOUBLE_EQ(report.overall.der(), 0.75);
  EXPECT_EQ(report.hypothesis_only_files, std::vector<std::string>{"c"});

  const Uem uem = {{"a", {{0, 10}}}, {"z", {{0, 1}}}};
  EXPECT_THROW(score_diarization(ref, hyp, &uem, {}), Error);  // b has no UEM line
  const Uem full = {{"a", {{0, 10}}}, {"b", {{0, 10}}}, {"z", {{0, 1}}}};
  EXPECT_EQ(score_diarization(ref, hyp, &full, {}).uem_only_files, std::vector<std::string>{"z"});
  EXPECT_THROW(score_diarization({}, hyp, nullptr, {}), Error);
}

TEST(DerReport, WarnsAboutFilesThatDoNotPairUp) {
  std::vector<Turn> ref = {{"trn00", 0, 10, "A"}, {"dev00", 0, 10, "B"}, {"tst01", 0, 4, "C"}};
  std::vector<Turn> hyp = {{"trñ00", 0, 5, "x"}, {"dev00", 0, 10, "y"}, {"zzz", 0, 1, "z"}};
  const Uem uem = {
      {"trn00", {{0, 30}}}, {"dev00", {{0, 30}}}, {"tst01", {{0, 30}}}, {"extra", {{0, 1}}}};
  const DerReport report = score_diarization(ref, hyp, &uem, {});
  EXPECT_EQ(report.reference_only_files, (std::vector<std::string>{"trn00", "tst01"}));
  const auto warnings = unmatched_file_warnings(report);
  ASSERT_EQ(warnings.size(), 4u);
  EXPECT_EQ(warnings[0],
            "hypothesis file 'trñ00' is not in the reference and is not scored (the reference has "
            "'trn00' with no hypothesis: same recording?)");
  EXPECT_EQ(warnings[1], "hypothesis file 'zzz' is not in the reference and is not scored");
  EXPECT_EQ(warnings[2],
            "2 reference files have no hypothesis turns and are scored as all missed: 'trn00', "
            "'tst01'");
  EXPECT_EQ(warnings[3], "1 UEM file is not in the reference and is not scored: 'extra'");
  EXPECT_TRUE(unmatched_file_warnings(score_diarization(ref, ref, nullptr, {})).empty());
}

TEST(DerReport, TableAndJson) {
  std::vector<Turn> ref = {{"trñ00", 0, 10, "MÉO069"}, {"b", 0, 10, "B"}};
  std::vector<Turn> hyp = {{"trñ00", 0, 5, "x"}, {"b", 0, 10, "y"}, {"b", 10, 2, "z"}};
  ScoringOptions options = scoring_options(Convention::voxconverse);
  const DerReport report = score_diarization(ref, hyp, nullptr, options);
  const std::string table = format_der_table(report);
  EXPECT_EQ(table,
            "collar 0.25 s each side of reference boundaries, overlapped speech scored, no UEM: "
            "scored from first to last reference or hypothesis turn\n"
            "file      DER%  missed%  false alarm%  confusion%  speech (s)\n"
            "b        18.42     0.00         18.42        0.00        9.50\n"
            "trñ00    50.00    50.00          0.00        0.00        9.50\n"
            "TOTAL    34.21    25.00          9.21        0.00       19.00\n");
  const auto json = der_report_json(report);
  EXPECT_DOUBLE_EQ(json["collar"].get<double>(), 0.25);
  ASSERT_EQ(json["files"].size(), 2u);
  EXPECT_EQ(json["files"][1]["file"], "trñ00");
  EXPECT_DOUBLE_EQ(json["files"][1]["missed"].get<double>(), 4.75 / 9.5);
  EXPECT_EQ(json["files"][1]["speaker_mapping"]["MÉO069"], "x");
  EXPECT_DOUBLE_EQ(json["total"]["total"].get<double>(), 19.0);
  EXPECT_DOUBLE_EQ(json["total"]["der"].get<double>(), report.overall.der());
}

}  // namespace
}  // namespace parley::eval
