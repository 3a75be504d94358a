#pragma once
// How well a library names the speakers of labelled recordings (`parley voiceprint evaluate`):
// each recording is diarized, its clusters are mapped to the reference speakers by the DER's
// optimal mapping (eval/der.h), and each mapped cluster is
//   * a set of trials for the equal-error rate: its score against every library name, a target
//     trial when the name is the reference speaker's label, a non-target trial otherwise;
//   * one identification decision: correct when identification (identification.h, at the
//     threshold) names it with its reference label, or leaves it unnamed when that label is not an
//     enrolled name.
#include <cstddef>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "eval/rttm.h"
#include "identity/identification.h"
#include "pipeline/diarizer.h"

namespace parley::identity {

struct EqualErrorRate {
  double rate = 0.0;       // where false acceptances and false rejections are (nearly) equal
  double threshold = 0.0;  // the score threshold there (accept at or above)
};

// From the scores of target and non-target trials; fails without either.
EqualErrorRate equal_error_rate(std::span<const double> targets,
                                std::span<const double> nontargets);

struct IdentificationTally {
  std::size_t clusters = 0;  // mapped to a reference speaker
  std::size_t correct = 0;
  std::vector<double> target_scores;
  std::vector<double> nontarget_scores;

  double accuracy() const {
    return clusters == 0 ? 0.0 : static_cast<double>(correct) / static_cast<double>(clusters);
  }
};

// Adds one recording's clusters. `enrolled`: the names the library is expected to know.
void tally_recording(IdentificationTally& tally, pipeline::DiarizationResult result,
                     std::span<const eval::Turn> reference, std::span<const Candidate> candidates,
                     const std::set<std::string>& enrolled, double threshold);

}  // namespace parley::identity
