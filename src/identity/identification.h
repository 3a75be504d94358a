#pragma once
// Which clusters of a diarization are which library speakers.
//   score: cosine similarity between a cluster's centroid and a voiceprint (-1 to 1); a name's
//     score is the best of its voiceprints'. A zero or non-finite centroid scores NaN and never
//     matches.
//   match: a cluster and a name may match when the score is at least the threshold
//     (kDefaultThreshold unless told otherwise). The assignment is exclusive and optimal: one name
//     per cluster, one cluster per name, the matching that maximises the sum over matched pairs of
//     (score - threshold), solved exactly (core/linear_assignment.h, the Hungarian method's
//     shortest-augmenting-path form).
//   confidence: for a matched pair, how far its score lies above the best other reason to decide
//     otherwise: the threshold, the cluster's score with any other name and the name's score
//     with any other cluster; clamped to [0, 1]. 0: a coin toss, higher: clearer.
// Clusters left without a name keep their SPEAKER_xx label.
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/ndarray.h"
#include "identity/speaker_library.h"
#include "pipeline/diarizer.h"
#include "pipeline/option_table.h"

namespace parley::identity {

// The threshold for WeSpeaker ResNet34-LM's cosine scores. Not validated here (the models this
// project is built with are a random-weight twin): `parley voiceprint evaluate` measures the
// equal-error threshold on labelled recordings, to choose one.
inline constexpr double kDefaultThreshold = pipeline::kDefaultIdentifyThreshold;

// The voiceprints of one name.
struct Candidate {
  std::string name;
  std::vector<std::vector<float>> embeddings;
};

// The library's names with their voiceprints, each checked against the model in use
// (`model_digest`): fails naming the first voiceprint of another model.
std::vector<Candidate> library_candidates(std::span<const LibraryEntry> entries,
                                          std::string_view model_digest);

double cosine_similarity(std::span<const float> a, std::span<const float> b);

// [rows, candidates] scores of the rows of `centroids` [rows, D] against each candidate.
NdArray<double> score_matrix(const NdArray<float>& centroids,
                             std::span<const Candidate> candidates);

struct Match {
  std::size_t row = 0;     // the cluster
  std::size_t column = 0;  // the candidate
  double score = 0.0;
  double confidence = 0.0;
};

// The exclusive optimal matching of rows to columns of `scores` [rows, columns] at `threshold`,
// by row.
std::vector<Match> exclusive_matches(const NdArray<double>& scores, double threshold);

struct NamedSpeaker {
  std::string label;  // SPEAKER_xx
  std::string name;
  double score = 0.0;
  double confidence = 0.0;
};

// A cluster that could not be compared with the voiceprints, and why (why_not_comparable).
struct UnidentifiableSpeaker {
  std::string label;  // SPEAKER_xx
  std::string reason;
};

struct Identification {
  std::vector<NamedSpeaker> named;                    // by label
  std::vector<UnidentifiableSpeaker> unidentifiable;  // by label
  double threshold = kDefaultThreshold;
  std::size_t speakers = 0;  // clusters looked at
};

// Scores every cluster of `result` (its speaker_embeddings) against `candidates`, matches them
// and renames the named clusters' turns (both lists); what it did, for the outputs.
Identification identify(pipeline::DiarizationResult& result, std::span<const Candidate> candidates,
                        double threshold = kDefaultThreshold);

// A diarization's JSON document (frames::format_json) with the names: "speaker_embeddings" keyed
// by the labels the turns carry, and "identification": {"threshold", "speakers": [{"label",
// "name", "score", "confidence"}...], "unidentifiable": [{"label", "reason"}...]} (the second list
// only when some cluster could not be compared).
std::string add_identification_json(const std::string& document,
                                    const Identification& identification);

}  // namespace parley::identity
