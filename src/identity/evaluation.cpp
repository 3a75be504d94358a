#include "identity/evaluation.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.h"
#include "eval/der.h"
#include "frames/output.h"
#include "frames/segments.h"

namespace parley::identity {

EqualErrorRate equal_error_rate(std::span<const double> targets,
                                std::span<const double> nontargets) {
  if (targets.empty() || nontargets.empty()) {
    fail(
        "an equal-error rate needs target and non-target trials (got {} and {}): the references "
        "must name speakers the library knows, and the library more than one",
        targets.size(), nontargets.size());
  }
  std::vector<double> target(targets.begin(), targets.end());
  std::vector<double> nontarget(nontargets.begin(), nontargets.end());
  std::sort(target.begin(), target.end());
  std::sort(nontarget.begin(), nontarget.end());
  std::vector<double> thresholds = target;
  thresholds.insert(thresholds.end(), nontarget.begin(), nontarget.end());
  std::sort(thresholds.begin(), thresholds.end());
  thresholds.erase(std::unique(thresholds.begin(), thresholds.end()), thresholds.end());
  EqualErrorRate best{2.0, 0.0};
  double best_gap = 2.0;
  for (const double threshold : thresholds) {
    // Accept at or above the threshold, as identification does.
    const double rejected =
        static_cast<double>(std::lower_bound(target.begin(), target.end(), threshold) -
                            target.begin()) /
        static_cast<double>(target.size());
    const double accepted =
        static_cast<double>(nontarget.end() -
                            std::lower_bound(nontarget.begin(), nontarget.end(), threshold)) /
        static_cast<double>(nontarget.size());
    const double gap = std::abs(rejected - accepted);
    if (gap < best_gap) {
      best_gap = gap;
      best = {(rejected + accepted) / 2.0, threshold};
    }
  }
  return best;
}

void tally_recording(IdentificationTally& tally, pipeline::DiarizationResult result,
                     std::span<const eval::Turn> reference, std::span<const Candidate> candidates,
                     const std::set<std::string>& enrolled, double threshold) {
  const auto hypothesis = frames::to_eval_turns(result.turns, result.uri);
  const eval::FileScore score =
      eval::score_file(result.uri, reference, hypothesis, nullptr, eval::ScoringOptions{});
  std::map<std::string, std::string> truth;  // SPEAKER_xx -> reference label
  for (const auto& [reference_speaker, hypothesis_speaker] : score.speaker_mapping) {
    truth[hypothesis_speaker] = reference_speaker;
  }
  const NdArray<double> scores = score_matrix(result.speaker_embeddings, candidates);
  const Identification identification = identify(result, candidates, threshold);
  std::map<std::string, std::string> named;
  for (const NamedSpeaker& speaker : identification.named) named[speaker.label] = speaker.name;
  for (std::size_t row = 0; row < scores.dim(0); ++row) {
    const std::string label = frames::speaker_label(row);
    const auto actual = truth.find(label);
    if (actual == truth.end()) continue;
    ++tally.clusters;
    const auto given = named.find(label);
    const std::string expected = enrolled.contains(actual->second) ? actual->second : "";
    tally.correct += (given == named.end() ? "" : given->second) == expected;
    for (std::size_t column = 0; column < candidates.size(); ++column) {
      if (!std::isfinite(scores(row, column))) continue;
      (candidates[column].name == actual->second ? tally.target_scores : tally.nontarget_scores)
          .push_back(scores(row, column));
    }
  }
}

}  // namespace parley::identity
