// Proves parley's DER equals NIST md-eval.pl's, to 0.01 percentage points, on every recording of
// ../shared/eval, against deterministic damaged hypotheses, under the strict, VoxConverse and
// lenient conventions, with a UEM, without one (md-eval's reference-extent region), and with
// parley's default region (first to last turn of either side, given to md-eval as a UEM).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "eval/der.h"
#include "eval/hypothesis_perturbation_test_support.h"
#include "eval/md_eval_test_support.h"
#include "eval/rttm.h"
#include "eval/text_records.h"
#include "eval/uem.h"
#include "testing/shared_data.h"
#include "testing/temporary_directory.h"

namespace parley::eval {
namespace {

using testing::MdEvalRunner;
using testing::MdEvalScores;
using testing::Perturbation;
using testing::SeededRandom;

constexpr std::uint64_t kSeed = 0x5eed'da7a'2024ULL;
constexpr int kHypothesisSets = 40;
constexpr double kTolerancePercentagePoints = 0.01;
constexpr double kToleranceSeconds = 1e-5;

// Every reference RTTM under eval/, as parley parses it and as one file for md-eval, plus the
// UEMs distributed with them.
struct Corpus {
  std::vector<Turn> reference;
  std::map<std::string, Annotation> by_file;
  Uem shared_uem;
  std::vector<std::string> rttm_names;
};

Corpus load_corpus(const std::filesystem::path& eval_dir, const std::filesystem::path& ref_out) {
  Corpus corpus;
  std::vector<std::filesystem::path> rttms;
  std::vector<std::filesystem::path> uems;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(eval_dir)) {
    if (entry.path().extension() == ".rttm") rttms.push_back(entry.path());
    if (entry.path().extension() == ".uem") uems.push_back(entry.path());
  }
  std::sort(rttms.begin(), rttms.end());
  std::sort(uems.begin(), uems.end());
  std::ofstream combined(ref_out, std::ios::binary);
  for (const auto& path : rttms) {
    const std::string text = read_text_file(path, "reference RTTM");
    combined << text;
    if (!text.empty() && text.back() != '\n') combined << '\n';
    const auto turns = read_rttm(path);
    corpus.reference.insert(corpus.reference.end(), turns.begin(), turns.end());
    corpus.rttm_names.push_back(std::filesystem::relative(path, eval_dir).string());
  }
  for (const auto& path : uems) {
    for (auto& [file_id, timeline] : read_uem(path)) {
      EXPECT_TRUE(corpus.shared_uem.emplace(file_id, timeline).second)
          << file_id << " has lines in two UEM files";
    }
  }
  corpus.by_file = group_by_file(corpus.reference);
  return corpus;
}

// md-eval strips what looks like a folder or an extension from UEM file ids; ids with '/' or
// '.' would silently stop matching there.
bool md_eval_safe_id(const std::string& file_id) {
  return file_id.find_first_of("/.") == std::string::npos;
}

std::vector<Perturbation> recipe_for(int set, SeededRandom& random) {
  constexpr std::size_t kKinds = std::size(testing::kAllPerturbations);
  if (set == 0) return {};
  if (static_cast<std::size_t>(set) <= kKinds) return {testing::kAllPerturbations[set - 1]};
  std::vector<Perturbation> kinds(std::begin(testing::kAllPerturbations),
                                  std::end(testing::kAllPerturbations));
  for (std::size_t k = kinds.size(); k > 1; --k) std::swap(kinds[k - 1], kinds[random.index(k)]);
  kinds.resize(2 + random.index(3));
  return kinds;
}

std::string describe(const std::vector<Perturbation>& recipe) {
  static const char* const kNames[] = {"shift_boundaries", "offset_all",    "split_turns",
                                       "merge_turns",      "relabel_turns", "drop_turns",
                                       "add_turns",        "rename_unicode"};
  std::string text;
  for (const Perturbation perturbation : recipe) {
    if (!text.empty()) text += '+';
    text += kNames[static_cast<int>(perturbation)];
  }
  return text.empty() ? "identity" : text;
}

double reference_end(const Annotation& turns) {
  double end = 0.0;
  for (const Turn& turn : turns) end = std::max(end, turn.end());
  return end;
}

double milliseconds(double seconds) { return std::round(seconds * 1000.0) / 1000.0; }

// A region that keeps most of the recording: a random start and end, sometimes a hole.
Timeline random_uem(double end, SeededRandom& random) {
  const double start = milliseconds(random.uniform(0.0, 0.3 * end));
  const double stop = milliseconds(random.uniform(0.7 * end, end + 2.0));
  if (random.chance(0.5)) {
    const double hole_start = milliseconds(random.uniform(0.35 * end, 0.5 * end));
    const double hole_end = milliseconds(hole_start + random.uniform(0.1, 0.15 * end));
    return {{start, hole_start}, {hole_end, stop}};
  }
  return {{start, stop}};
}

// md-eval divides by the scored speech of every file, so a region must keep some of it under
// the most restrictive convention.
Timeline random_uem_with_speech(const Annotation& reference, SeededRandom& random) {
  const ScoringOptions lenient = scoring_options(Convention::lenient);
  for (int attempt = 0; attempt < 20; ++attempt) {
    Timeline uem = random_uem(reference_end(reference), random);
    if (score_file("", reference, {}, &uem, lenient).times.total > 0.01) return uem;
  }
  return {{0.0, milliseconds(reference_end(reference) + 2.0)}};
}

Uem union_extent_uem(const std::map<std::string, Annotation>& reference,
                     const std::vector<Turn>& hypothesis) {
  Uem uem;
  std::map<std::string, Interval> extent;
  const auto extend = [&](const Turn& turn) {
    auto [it, added] = extent.emplace(turn.file_id, Interval{turn.start, turn.end()});
    if (!added) {
      it->second.start = std::min(it->second.start, turn.start);
      it->second.end = std::max(it->second.end, turn.end());
    }
  };
  for (const auto& [file_id, turns] : reference) std::for_each(turns.begin(), turns.end(), extend);
  std::for_each(hypothesis.begin(), hypothesis.end(), extend);
  for (const auto& [file_id, interval] : extent) {
    if (reference.contains(file_id)) uem[file_id] = {interval};
  }
  return uem;
}

struct Agreement {
  int comparisons = 0;
  int md_eval_runs = 0;
  double worst_percentage_points = 0.0;
  std::string worst_where;
};

void expect_same(const ErrorTimes& parley, const ErrorTimes& md_eval, const std::string& where,
                 Agreement& agreement) {
  const std::pair<const char*, double ErrorTimes::*> parts[] = {
      {"missed", &ErrorTimes::missed},
      {"false alarm", &ErrorTimes::false_alarm},
      {"confusion", &ErrorTimes::confusion}};
  const auto check = [&](const char* what, double ours, double theirs) {
    const double difference = 100.0 * std::abs(ours - theirs);
    EXPECT_LE(difference, kTolerancePercentagePoints)
        << where << ": " << what << " parley " << 100.0 * ours << " % vs md-eval " << 100.0 * theirs
        << " %";
    if (difference > agreement.worst_percentage_points) {
      agreement.worst_percentage_points = difference;
      agreement.worst_where = fmt::format("{} ({})", where, what);
    }
    ++agreement.comparisons;
  };
  check("DER", parley.der(), md_eval.der());
  for (const auto& [what, member] : parts) {
    check(what, parley.rate(parley.*member), md_eval.rate(md_eval.*member));
  }
  EXPECT_NEAR(parley.total, md_eval.total, kToleranceSeconds) << where << ": scored speech";
}

void expect_same(const DerReport& parley, const MdEvalScores& md_eval, const std::string& where,
                 Agreement& agreement) {
  ++agreement.md_eval_runs;
  EXPECT_EQ(parley.files.size(), md_eval.files.size()) << where;
  for (const FileScore& file : parley.files) {
    const auto found = md_eval.files.find(file.file_id);
    if (found == md_eval.files.end()) {
      ADD_FAILURE() << where << ": md-eval did not score " << file.file_id;
      continue;
    }
    expect_same(file.times, found->second, fmt::format("{} file {}", where, file.file_id),
                agreement);
  }
  expect_same(parley.overall, md_eval.overall, where + " overall", agreement);
}

TEST(MdEvalAgreement, DamagedHypothesesOnSharedRecordings) {
  PARLEY_REQUIRE_SHARED(eval_dir, "eval");
  const auto work_dir =
      std::filesystem::temp_directory_path() / fmt::format("parley_md_eval_{}", ::getpid());
  std::filesystem::create_directories(work_dir);
  std::string why_not;
  const auto md_eval = MdEvalRunner::locate(work_dir, why_not);
  if (!md_eval) {
    std::filesystem::remove_all(work_dir);
    GTEST_SKIP() << why_not;
  }

  const auto ref_path = work_dir / "ref.rttm";
  const auto hyp_path = work_dir / "hyp.rttm";
  const auto uem_path = work_dir / "given.uem";
  const auto extent_path = work_dir / "extent.uem";
  const Corpus corpus = load_corpus(eval_dir, ref_path);
  ASSERT_GE(corpus.by_file.size(), 18u) << "expected ami-debug, pyannote-sample, falcon-test and "
                                           "pyaudioanalysis recordings under "
                                        << eval_dir;
  ASSERT_FALSE(corpus.shared_uem.empty());
  for (const auto& [file_id, turns] : corpus.by_file) {
    ASSERT_TRUE(md_eval_safe_id(file_id)) << file_id;
  }

  Agreement agreement;
  for (int set = 0; set < kHypothesisSets; ++set) {
    SeededRandom random(kSeed + static_cast<std::uint64_t>(set));
    const std::vector<Perturbation> recipe = recipe_for(set, random);
    std::vector<Turn> hypothesis;
    for (const auto& [file_id, turns] : corpus.by_file) {
      // Now and then a recording the system produced nothing for.
      if (set > 0 && random.chance(0.04)) continue;
      const auto damaged = testing::perturb_reference(turns, recipe, random);
      hypothesis.insert(hypothesis.end(), damaged.begin(), damaged.end());
    }
    write_rttm(hyp_path, hypothesis);

    // Even sets: the UEMs shipped with the data (a random one for recordings without). Odd
    // sets: random regions everywhere, cutting through turns.
    Uem given;
    for (const auto& [file_id, turns] : corpus.by_file) {
      const auto shared = corpus.shared_uem.find(file_id);
      given[file_id] = set % 2 == 0 && shared != corpus.shared_uem.end()
                           ? shared->second
                           : random_uem_with_speech(turns, random);
    }
    {
      std::ofstream out(uem_path, std::ios::binary);
      write_uem(out, given);
    }
    const bool check_default_region = set % 3 == 0;
    if (check_default_region) {
      std::ofstream out(extent_path, std::ios::binary);
      write_uem(out, union_extent_uem(corpus.by_file, hypothesis));
    }

    // parley reads back exactly the text md-eval reads.
    const std::vector<Turn> hypothesis_read = read_rttm(hyp_path);
    const Uem given_read = read_uem(uem_path);
    for (const Convention convention :
         {Convention::strict, Convention::voxconverse, Convention::lenient}) {
      const ScoringOptions options = scoring_options(convention);
      const std::string where =
          fmt::format("set {} [{}] {}", set, describe(recipe), convention_name(convention));

      expect_same(
          score_diarization(corpus.reference, hypothesis_read, &given_read, options),
          md_eval->score(ref_path, hyp_path, uem_path, options.collar, options.skip_overlap),
          where + " with UEM", agreement);

      ScoringOptions reference_region = options;
      reference_region.implicit_uem = ImplicitUem::reference;
      expect_same(score_diarization(corpus.reference, hypothesis_read, nullptr, reference_region),
                  md_eval->score(ref_path, hyp_path, {}, options.collar, options.skip_overlap),
                  where + " without UEM", agreement);

      if (check_default_region) {
        expect_same(
            score_diarization(corpus.reference, hypothesis_read, nullptr, options),
            md_eval->score(ref_path, hyp_path, extent_path, options.collar, options.skip_overlap),
            where + " default region", agreement);
      }
    }
    if (::testing::Test::HasFailure()) break;  // one set's messages are enough to debug
  }

  std::cout << fmt::format(
      "md-eval agreement: {} recordings from {} RTTM files, {} hypothesis sets, {} md-eval runs, "
      "{} rate comparisons; largest difference {:.6f} percentage points ({})\n",
      corpus.by_file.size(), corpus.rttm_names.size(), kHypothesisSets, agreement.md_eval_runs,
      agreement.comparisons, agreement.worst_percentage_points, agreement.worst_where);
  ::testing::Test::RecordProperty("md_eval_runs", agreement.md_eval_runs);
  ::testing::Test::RecordProperty("worst_percentage_points",
                                  fmt::format("{:.6f}", agreement.worst_percentage_points));
  if (!::testing::Test::HasFailure()) std::filesystem::remove_all(work_dir);
}

// The two places parley and md-eval.pl disagreed (issue 17). A reference speaker whose turns
// overlap each other under -1 (skip overlap): now the same. UEM lines whose channel is NA, as in
// ami-debug's UEMs: md-eval matches channels and ignores them, parley applies them as
// pyannote.metrics does, so parley equals md-eval given the same UEM with channel 1.
TEST(MdEvalAgreement, SelfOverlappingSpeakerAndUemChannelNa) {
  const parley::testing::TemporaryDirectory temp("md-eval-edges");
  std::string why_not;
  const auto md_eval = MdEvalRunner::locate(temp.path(), why_not);
  if (!md_eval) GTEST_SKIP() << why_not;
  const std::vector<Turn> reference = {
      {"f", 0.0, 6.0, "A"}, {"f", 4.0, 6.0, "A"}, {"f", 8.0, 4.0, "B"}, {"f", 13.0, 2.0, "B"}};
  const std::vector<Turn> hypothesis = {{"f", 0.0, 9.0, "x"}, {"f", 9.0, 6.0, "y"}};
  write_rttm(temp / "ref.rttm", reference);
  write_rttm(temp / "hyp.rttm", hypothesis);
  std::ofstream(temp / "na.uem") << "f NA 1.0 14.0\n";
  std::ofstream(temp / "one.uem") << "f 1 1.0 14.0\n";
  Agreement agreement;
  for (const bool skip_overlap : {false, true}) {
    ScoringOptions options = scoring_options(Convention::strict);
    options.skip_overlap = skip_overlap;
    const std::string where = skip_overlap ? "skip overlap" : "overlap scored";
    const Uem uem = read_uem(temp / "na.uem");
    expect_same(
        score_diarization(reference, hypothesis, &uem, options),
        md_eval->score(temp / "ref.rttm", temp / "hyp.rttm", temp / "one.uem", 0.0, skip_overlap),
        where + ", UEM channel NA (md-eval given channel 1)", agreement);
    ScoringOptions reference_region = options;
    reference_region.implicit_uem = ImplicitUem::reference;
    expect_same(score_diarization(reference, hypothesis, nullptr, reference_region),
                md_eval->score(temp / "ref.rttm", temp / "hyp.rttm", {}, 0.0, skip_overlap),
                where + ", no UEM", agreement);
  }
  // md-eval itself ignores the NA lines: it scores the reference's whole extent.
  const ErrorTimes ignored =
      md_eval->score(temp / "ref.rttm", temp / "hyp.rttm", temp / "na.uem", 0.0, false).overall;
  EXPECT_NEAR(ignored.total, 16.0, 1e-6);
}

}  // namespace
}  // namespace parley::eval
