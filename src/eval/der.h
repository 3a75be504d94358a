#pragma once
// Diarization error rate (NIST RT definition, as md-eval.pl computes it), with exact interval
// arithmetic. Per file:
//   missed      = sum over scored time of max(0, #reference speakers - #hypothesis speakers)
//   false alarm = sum over scored time of max(0, #hypothesis speakers - #reference speakers)
//   confusion   = sum over scored time of min(#ref, #hyp) - #correctly mapped speakers
//   total       = sum over scored time of #reference speakers (reference speech, overlap counted
//                 once per speaker)
//   DER         = (missed + false alarm + confusion) / total
// Speakers are mapped one-to-one per file so as to maximize their co-occurring time within the
// evaluated region (before collars and overlap are removed, as md-eval does). docs/scoring.md
// explains the conventions and where md-eval, dscore and pyannote.metrics differ.
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "eval/rttm.h"
#include "eval/timeline.h"
#include "eval/uem.h"

namespace parley::eval {

// The evaluated region of a file when no UEM is given.
enum class ImplicitUem {
  // From the earliest to the latest turn of reference or hypothesis (pyannote.metrics, dscore).
  reference_and_hypothesis,
  // From the earliest to the latest reference turn (md-eval.pl run without -u).
  reference,
};

struct ScoringOptions {
  // Seconds left unscored on EACH side of every reference turn boundary: md-eval's -c and
  // dscore's --collar. pyannote.metrics' `collar` is the total width, i.e. twice this value.
  double collar = 0.0;
  // Leave regions where two or more reference speakers overlap unscored (md-eval -1).
  bool skip_overlap = false;
  ImplicitUem implicit_uem = ImplicitUem::reference_and_hypothesis;
};

// "" when `collar` is a valid ScoringOptions::collar (a finite number of seconds, at least 0),
// else what is wrong: what score_file fails with, and every face's check of a given collar.
std::string collar_problem(double collar);

// The three settings results are published under.
enum class Convention {
  strict,       // collar 0, overlap scored (pyannote.audio benchmarks, DIHARD "full")
  voxconverse,  // collar 0.25 s, overlap scored (VoxConverse paper, VoxSRC)
  lenient,      // collar 0.25 s, overlap not scored (older NIST RT / CALLHOME "forgiving")
};

ScoringOptions scoring_options(Convention convention);
// "strict", "voxconverse" or "lenient"; anything else fails listing those.
Convention parse_convention(std::string_view name);
std::string_view convention_name(Convention convention);

// Error components in seconds.
struct ErrorTimes {
  double missed = 0.0;
  double false_alarm = 0.0;
  double confusion = 0.0;
  double total = 0.0;  // scored reference speech

  double error() const { return missed + false_alarm + confusion; }
  // `seconds` as a fraction of `total`, always finite. With no reference speech scored (less
  // than a nanosecond counts as none) the fraction is 0 when `seconds` is that small too and 1
  // otherwise (any hypothesis speech there is all error).
  double rate(double seconds) const;
  double der() const { return rate(error()); }

  ErrorTimes& operator+=(const ErrorTimes& other);
};

struct FileScore {
  std::string file_id;
  ErrorTimes times;
  // Reference speaker -> hypothesis speaker, for the pairs the optimal mapping matched.
  std::map<std::string, std::string> speaker_mapping;
};

struct DerReport {
  ScoringOptions options;
  bool uem_given = false;
  std::vector<FileScore> files;  // every file of the reference, by file id (byte order)
  ErrorTimes overall;            // sums over files; overall.der() is the corpus DER
  // Files only the hypothesis (or only the UEM) names: not scored, usually a misspelled file id.
  std::vector<std::string> hypothesis_only_files;
  std::vector<std::string> uem_only_files;
  // Reference files with no hypothesis turn at all (scored, as all missed).
  std::vector<std::string> reference_only_files;
};

// Scores one recording. `reference` and `hypothesis` hold its turns (their file ids are not
// looked at); `uem` is its evaluated region, or null to use options.implicit_uem.
FileScore score_file(std::string file_id, std::span<const Turn> reference,
                     std::span<const Turn> hypothesis, const Timeline* uem,
                     const ScoringOptions& options);

// Scores every file of the reference. With a UEM, every reference file must have an entry.
DerReport score_diarization(std::span<const Turn> reference, std::span<const Turn> hypothesis,
                            const Uem* uem, const ScoringOptions& options);

}  // namespace parley::eval
