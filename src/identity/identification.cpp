#include "identity/identification.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/linear_assignment.h"
#include "frames/segments.h"
#include "identity/voiceprint.h"

namespace parley::identity {

std::vector<Candidate> library_candidates(std::span<const LibraryEntry> entries,
                                          std::string_view model_digest) {
  std::vector<Candidate> candidates;
  std::map<std::string, std::size_t> index;
  for (const LibraryEntry& entry : entries) {
    check_model(entry.voiceprint, model_digest,
                fmt::format("voiceprint {} of {}", entry.id, entry.name));
    const auto [at, added] = index.emplace(entry.name, candidates.size());
    if (added) candidates.push_back({entry.name, {}});
    candidates[at->second].embeddings.push_back(entry.voiceprint.embedding);
  }
  return candidates;
}

double cosine_similarity(std::span<const float> a, std::span<const float> b) {
  if (a.size() != b.size()) {
    fail("embeddings of {} and {} values cannot be compared (another embedding model?)", a.size(),
         b.size());
  }
  double dot = 0.0;
  double norm_a = 0.0;
  double norm_b = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    dot += double{a[i]} * double{b[i]};
    norm_a += double{a[i]} * double{a[i]};
    norm_b += double{b[i]} * double{b[i]};
  }
  if (!(norm_a > 0.0) || !(norm_b > 0.0) || !std::isfinite(dot)) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  return dot / std::sqrt(norm_a * norm_b);
}

NdArray<double> score_matrix(const NdArray<float>& centroids,
                             std::span<const Candidate> candidates) {
  const std::size_t rows = centroids.rank() == 2 ? centroids.dim(0) : 0;
  NdArray<double> scores({rows, candidates.size()});
  for (std::size_t row = 0; row < rows; ++row) {
    const std::span<const float> centroid(centroids.data() + row * centroids.dim(1),
                                          centroids.dim(1));
    for (std::size_t column = 0; column < candidates.size(); ++column) {
      double best = std::numeric_limits<double>::quiet_NaN();
      for (const auto& embedding : candidates[column].embeddings) {
        const double score = cosine_similarity(centroid, embedding);
        if (std::isnan(best) || score > best) best = score;
      }
      scores(row, column) = best;
    }
  }
  return scores;
}

std::vector<Match> exclusive_matches(const NdArray<double>& scores, double threshold) {
  const std::size_t rows = scores.dim(0);
  const std::size_t columns = scores.dim(1);
  if (rows == 0 || columns == 0) return {};
  const auto allowed = [&](std::size_t r, std::size_t c) {
    return std::isfinite(scores(r, c)) && scores(r, c) >= threshold;
  };
  // A pair below the threshold gains nothing, which is what leaving both unmatched gains; a pair
  // at exactly the threshold gains a hair more, so that it matches.
  constexpr double kAtThreshold = 1e-9;
  NdArray<double> gains({rows, columns});
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < columns; ++c) {
      gains(r, c) = allowed(r, c) ? scores(r, c) - threshold + kAtThreshold : 0.0;
    }
  }
  const Assignment assignment = linear_sum_assignment(gains, AssignmentGoal::maximize);
  std::vector<Match> matches;
  for (std::size_t k = 0; k < assignment.rows.size(); ++k) {
    const std::size_t r = assignment.rows[k];
    const std::size_t c = assignment.cols[k];
    if (!allowed(r, c)) continue;
    double rival = threshold;
    for (std::size_t other = 0; other < columns; ++other) {
      if (other != c && std::isfinite(scores(r, other))) rival = std::max(rival, scores(r, other));
    }
    for (std::size_t other = 0; other < rows; ++other) {
      if (other != r && std::isfinite(scores(other, c))) rival = std::max(rival, scores(other, c));
    }
    matches.push_back({r, c, scores(r, c), std::clamp(scores(r, c) - rival, 0.0, 1.0)});
  }
  return matches;
}

Identification identify(pipeline::DiarizationResult& result, std::span<const Candidate> candidates,
                        double threshold) {
  Identification identification;
  identification.threshold = threshold;
  const NdArray<double> scores = score_matrix(result.speaker_embeddings, candidates);
  identification.speakers = scores.dim(0);
  for (std::size_t row = 0; row < identification.speakers; ++row) {
    const std::string why = why_not_comparable(embedding_row(result.speaker_embeddings, row));
    if (!why.empty()) identification.unidentifiable.push_back({frames::speaker_label(row), why});
  }
  std::map<std::string, std::string> names;
  for (const Match& match : exclusive_matches(scores, threshold)) {
    const std::string label = frames::speaker_label(match.row);
    identification.named.push_back(
        {label, candidates[match.column].name, match.score, match.confidence});
    names[label] = candidates[match.column].name;
  }
  for (auto* turns : {&result.turns, &result.exclusive_turns}) {
    for (frames::Turn& turn : *turns) {
      const auto name = names.find(turn.speaker);
      if (name != names.end()) turn.speaker = name->second;
    }
  }
  return identification;
}

std::string add_identification_json(const std::string& document,
                                    const Identification& identification) {
  // Parsing and dumping again keeps every number's text: nlohmann writes the shortest text that
  // reads back as the same double, which is what frames::format_json wrote.
  nlohmann::ordered_json parsed = nlohmann::ordered_json::parse(document);
  std::map<std::string, std::string> names;
  for (const NamedSpeaker& named : identification.named) names[named.label] = named.name;
  if (parsed.contains("speaker_embeddings")) {
    nlohmann::ordered_json renamed = nlohmann::ordered_json::object();
    for (auto& [label, embedding] : parsed["speaker_embeddings"].items()) {
      const auto name = names.find(label);
      renamed[name != names.end() ? name->second : label] = std::move(embedding);
    }
    parsed["speaker_embeddings"] = std::move(renamed);
  }
  nlohmann::ordered_json speakers = nlohmann::ordered_json::array();
  for (const NamedSpeaker& named : identification.named) {
    speakers.push_back({{"label", named.label},
                        {"name", named.name},
                        {"score", named.score},
                        {"confidence", named.confidence}});
  }
  parsed["identification"] = {{"threshold", identification.threshold},
                              {"speakers", std::move(speakers)}};
  if (!identification.unidentifiable.empty()) {
    nlohmann::ordered_json unidentifiable = nlohmann::ordered_json::array();
    for (const UnidentifiableSpeaker& speaker : identification.unidentifiable) {
      unidentifiable.push_back({{"label", speaker.label}, {"reason", speaker.reason}});
    }
    parsed["identification"]["unidentifiable"] = std::move(unidentifiable);
  }
  return parsed.dump(2) + "\n";
}

}  // namespace parley::identity
