#include "eval/der.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <utility>

#include "core/error.h"
#include "core/linear_assignment.h"
#include "core/ndarray.h"

namespace parley::eval {
namespace {

// Speech of each speaker of one file, speakers in byte order of their names. Turns of one
// speaker that overlap are merged: a speaker either speaks at a given time or does not.
struct SpeakerSpeech {
  std::vector<std::string> names;
  std::vector<Timeline> speech;
};

SpeakerSpeech speech_by_speaker(std::span<const Turn> turns) {
  std::map<std::string, std::vector<Interval>> intervals;
  for (const Turn& turn : turns) intervals[turn.speaker].push_back({turn.start, turn.end()});
  SpeakerSpeech result;
  for (auto& [name, speaker_intervals] : intervals) {
    result.names.push_back(name);
    result.speech.push_back(make_timeline(std::move(speaker_intervals)));
  }
  return result;
}

// Earliest start to latest end over the given turns, zero-length turns included (md-eval counts
// them when it derives the evaluated region from the reference).
void extend_extent(std::span<const Turn> turns, double& earliest, double& latest) {
  for (const Turn& turn : turns) {
    earliest = std::min(earliest, turn.start);
    latest = std::max(latest, turn.end());
  }
}

Timeline implicit_region(std::span<const Turn> reference, std::span<const Turn> hypothesis,
                         ImplicitUem implicit_uem) {
  double earliest = std::numeric_limits<double>::infinity();
  double latest = -std::numeric_limits<double>::infinity();
  extend_extent(reference, earliest, latest);
  if (implicit_uem == ImplicitUem::reference_and_hypothesis) {
    extend_extent(hypothesis, earliest, latest);
  }
  if (!(latest > earliest)) return {};
  return {{earliest, latest}};
}

// Walks a timeline with increasing query times.
class TimelineCursor {
 public:
  explicit TimelineCursor(const Timeline& timeline) : timeline_(&timeline) {}

  bool active_at(double time) {
    while (index_ < timeline_->size() && (*timeline_)[index_].end <= time) ++index_;
    return index_ < timeline_->size() && (*timeline_)[index_].start <= time;
  }

 private:
  const Timeline* timeline_;
  std::size_t index_ = 0;
};

constexpr std::size_t kNotMapped = std::numeric_limits<std::size_t>::max();

}  // namespace

double ErrorTimes::rate(double seconds) const {
  // Less than a nanosecond of reference speech is none: a 1e-320 s turn gave DER "inf" (JSON
  // null) where an empty reference gives 0 or 100 %.
  constexpr double kNegligibleSeconds = 1e-9;
  if (total > kNegligibleSeconds) return seconds / total;
  return seconds > kNegligibleSeconds ? 1.0 : 0.0;
}

ErrorTimes& ErrorTimes::operator+=(const ErrorTimes& other) {
  missed += other.missed;
  false_alarm += other.false_alarm;
  confusion += other.confusion;
  total += other.total;
  return *this;
}

ScoringOptions scoring_options(Convention convention) {
  ScoringOptions options;
  switch (convention) {
    case Convention::strict:
      break;
    case Convention::voxconverse:
      options.collar = 0.25;
      break;
    case Convention::lenient:
      options.collar = 0.25;
      options.skip_overlap = true;
      break;
  }
  return options;
}

Convention parse_convention(std::string_view name) {
  for (const Convention convention :
       {Convention::strict, Convention::voxconverse, Convention::lenient}) {
    if (name == convention_name(convention)) return convention;
  }
  fail(
      "unknown scoring convention '{}'; use strict (collar 0, overlap scored), voxconverse "
      "(collar 0.25 s, overlap scored) or lenient (collar 0.25 s, overlap skipped)",
      name);
}

std::string_view convention_name(Convention convention) {
  switch (convention) {
    case Convention::strict:
      return "strict";
    case Convention::voxconverse:
      return "voxconverse";
    case Convention::lenient:
      return "lenient";
  }
  return "unknown";
}

std::string collar_problem(double collar) {
  if (collar >= 0.0 && std::isfinite(collar)) return "";
  return fmt::format("collar must be a finite number of seconds, at least 0 (got {})", collar);
}

FileScore score_file(std::string file_id, std::span<const Turn> reference,
                     std::span<const Turn> hypothesis, const Timeline* uem,
                     const ScoringOptions& options) {
  if (const std::string problem = collar_problem(options.collar); !problem.empty()) {
    fail("{}", problem);
  }
  const SpeakerSpeech ref = speech_by_speaker(reference);
  const SpeakerSpeech hyp = speech_by_speaker(hypothesis);
  const Timeline evaluated =
      uem != nullptr ? *uem : implicit_region(reference, hypothesis, options.implicit_uem);

  // Speaker mapping on the whole evaluated region, before collars and overlap are taken out:
  // that is where md-eval.pl computes it.
  const std::size_t ref_count = ref.names.size();
  const std::size_t hyp_count = hyp.names.size();
  NdArray<double> cooccurrence({ref_count, hyp_count}, 0.0);
  for (std::size_t r = 0; r < ref_count; ++r) {
    const Timeline ref_evaluated = intersect(ref.speech[r], evaluated);
    for (std::size_t h = 0; h < hyp_count; ++h) {
      cooccurrence(r, h) = total_duration(intersect(ref_evaluated, hyp.speech[h]));
    }
  }
  std::vector<std::size_t> hyp_of_ref(ref_count, kNotMapped);
  FileScore score;
  score.file_id = std::move(file_id);
  const Assignment assignment = linear_sum_assignment(cooccurrence, AssignmentGoal::maximize);
  for (std::size_t k = 0; k < assignment.rows.size(); ++k) {
    const std::size_t r = assignment.rows[k];
    const std::size_t h = assignment.cols[k];
    // A pair that never speaks together is no match: leaving it out changes no error count.
    if (cooccurrence(r, h) > 0.0) {
      hyp_of_ref[r] = h;
      score.speaker_mapping.emplace(ref.names[r], hyp.names[h]);
    }
  }

  Timeline scored = evaluated;
  if (options.collar > 0.0) {
    std::vector<Interval> collars;
    for (const Turn& turn : reference) {
      for (const double boundary : {turn.start, turn.end()}) {
        collars.push_back({boundary - options.collar, boundary + options.collar});
      }
    }
    scored = subtract(scored, make_timeline(std::move(collars)));
  }
  if (options.skip_overlap) {
    // Every reference turn on its own: where one speaker's turns overlap each other, md-eval.pl
    // (and pyannote.metrics' get_overlap) skip the stretch too, as for two speakers at once.
    std::vector<Timeline> turn_spans;
    turn_spans.reserve(reference.size());
    for (const Turn& turn : reference)
      turn_spans.push_back(make_timeline({{turn.start, turn.end()}}));
    scored = subtract(scored, covered_by_at_least(turn_spans, 2));
  }

  // Between consecutive boundaries nobody starts or stops, so the counts at the midpoint hold
  // for the whole stretch.
  std::vector<double> boundaries;
  for (const Interval& interval : scored) {
    boundaries.push_back(interval.start);
    boundaries.push_back(interval.end);
  }
  for (const std::vector<Timeline>* speech : {&ref.speech, &hyp.speech}) {
    for (const Timeline& timeline : *speech) {
      for (const Interval& interval : timeline) {
        boundaries.push_back(interval.start);
        boundaries.push_back(interval.end);
      }
    }
  }
  std::sort(boundaries.begin(), boundaries.end());
  boundaries.erase(std::unique(boundaries.begin(), boundaries.end()), boundaries.end());

  TimelineCursor scored_cursor(scored);
  std::vector<TimelineCursor> ref_cursors(ref.speech.begin(), ref.speech.end());
  std::vector<TimelineCursor> hyp_cursors(hyp.speech.begin(), hyp.speech.end());
  std::vector<bool> hyp_active(hyp_count);
  ErrorTimes& times = score.times;
  for (std::size_t k = 0; k + 1 < boundaries.size(); ++k) {
    const double duration = boundaries[k + 1] - boundaries[k];
    const double midpoint = boundaries[k] + duration / 2.0;
    if (!scored_cursor.active_at(midpoint)) continue;
    std::size_t hyp_speaking = 0;
    for (std::size_t h = 0; h < hyp_count; ++h) {
      hyp_active[h] = hyp_cursors[h].active_at(midpoint);
      hyp_speaking += hyp_active[h] ? 1 : 0;
    }
    std::size_t ref_speaking = 0;
    std::size_t correct = 0;
    for (std::size_t r = 0; r < ref_count; ++r) {
      if (!ref_cursors[r].active_at(midpoint)) continue;
      ++ref_speaking;
      if (hyp_of_ref[r] != kNotMapped && hyp_active[hyp_of_ref[r]]) ++correct;
    }
    const auto seconds = [duration](std::size_t count) {
      return duration * static_cast<double>(count);
    };
    times.total += seconds(ref_speaking);
    if (ref_speaking > hyp_speaking) times.missed += seconds(ref_speaking - hyp_speaking);
    if (hyp_speaking > ref_speaking) times.false_alarm += seconds(hyp_speaking - ref_speaking);
    times.confusion += seconds(std::min(ref_speaking, hyp_speaking) - correct);
  }
  return score;
}

DerReport score_diarization(std::span<const Turn> reference, std::span<const Turn> hypothesis,
                            const Uem* uem, const ScoringOptions& options) {
  const std::map<std::string, Annotation> ref_by_file = group_by_file(reference);
  const std::map<std::string, Annotation> hyp_by_file = group_by_file(hypothesis);
  if (ref_by_file.empty()) {
    fail("the reference has no SPEAKER turns, so there is nothing to score against");
  }
  DerReport report;
  report.options = options;
  report.uem_given = uem != nullptr;
  for (const auto& [file_id, ref_turns] : ref_by_file) {
    const Timeline* file_uem = nullptr;
    if (uem != nullptr) {
      const auto found = uem->find(file_id);
      if (found == uem->end()) {
        fail(
            "the UEM has no line for file '{}' of the reference; add '{} 1 <start> <end>' to "
            "it, or score without a UEM",
            file_id, file_id);
      }
      file_uem = &found->second;
    }
    const auto hyp_turns = hyp_by_file.find(file_id);
    if (hyp_turns == hyp_by_file.end()) report.reference_only_files.push_back(file_id);
    const std::span<const Turn> file_hypothesis =
        hyp_turns == hyp_by_file.end() ? std::span<const Turn>() : hyp_turns->second;
    report.files.push_back(score_file(file_id, ref_turns, file_hypothesis, file_uem, options));
    report.overall += report.files.back().times;
  }
  for (const auto& [file_id, turns] : hyp_by_file) {
    if (!ref_by_file.contains(file_id)) report.hypothesis_only_files.push_back(file_id);
  }
  if (uem != nullptr) {
    for (const auto& [file_id, timeline] : *uem) {
      if (!ref_by_file.contains(file_id)) report.uem_only_files.push_back(file_id);
    }
  }
  return report;
}

}  // namespace parley::eval
