#include "identity/speaker_linking.h"

#include <cmath>
#include <map>

#include <fmt/format.h>

#include "core/error.h"
#include "frames/segments.h"

namespace parley::identity {
namespace {

std::string global_label(std::size_t index) { return fmt::format("GLOBAL_{:02d}", index); }

std::vector<double> unit(std::span<const float> values) {
  double norm = 0.0;
  for (const float value : values) norm += double{value} * double{value};
  norm = std::sqrt(norm);
  std::vector<double> result(values.size(), 0.0);
  if (norm > 0.0 && std::isfinite(norm)) {
    for (std::size_t i = 0; i < values.size(); ++i) result[i] = values[i] / norm;
  }
  return result;
}

}  // namespace

RecordingSpeakers recording_speakers(const pipeline::DiarizationResult& result) {
  RecordingSpeakers speakers{result.uri, result.speaker_embeddings, {}};
  const std::size_t count =
      result.speaker_embeddings.rank() == 2 ? result.speaker_embeddings.dim(0) : 0;
  speakers.speech_seconds.assign(count, 0.0);
  for (const frames::Turn& turn : result.turns) {
    if (turn.speaker_index >= 0 && static_cast<std::size_t>(turn.speaker_index) < count) {
      speakers.speech_seconds[static_cast<std::size_t>(turn.speaker_index)] += turn.duration();
    }
  }
  return speakers;
}

Linking link_speakers(std::span<const RecordingSpeakers> recordings, double threshold) {
  Linking linking;
  linking.threshold = threshold;
  // Running sums of the members' unit centroids: the global centroid is their mean.
  std::vector<std::vector<double>> sums;
  std::vector<Candidate> globals;
  std::size_t dimension = 0;
  for (const RecordingSpeakers& recording : recordings) {
    const std::size_t count = recording.centroids.rank() == 2 ? recording.centroids.dim(0) : 0;
    if (count > 0) {
      if (dimension == 0) dimension = recording.centroids.dim(1);
      if (recording.centroids.dim(1) != dimension) {
        fail("{}: embeddings of {} values, the others have {} (another embedding model?)",
             recording.recording, recording.centroids.dim(1), dimension);
      }
    }
    std::vector<std::size_t> assigned(count, globals.size());
    std::vector<bool> matched(count, false);
    const NdArray<double> scores = score_matrix(recording.centroids, globals);
    for (const Match& match : exclusive_matches(scores, threshold)) {
      assigned[match.row] = match.column;
      matched[match.row] = true;
    }
    for (std::size_t s = 0; s < count; ++s) {
      const std::span<const float> centroid(recording.centroids.data() + s * dimension, dimension);
      if (!matched[s]) {
        assigned[s] = globals.size();
        globals.push_back({global_label(globals.size()), {{}}});
        sums.emplace_back(dimension, 0.0);
        linking.speakers.push_back({globals.back().name, {}, {}, 0.0, {}, 0.0, 0.0});
      }
      const std::size_t g = assigned[s];
      const std::vector<double> direction = unit(centroid);
      std::vector<float>& mean = globals[g].embeddings.front();
      mean.resize(dimension);
      for (std::size_t i = 0; i < dimension; ++i) {
        sums[g][i] += direction[i];
        mean[i] = static_cast<float>(sums[g][i]);  // scaling does not change a cosine
      }
      GlobalSpeaker& speaker = linking.speakers[g];
      if (speaker.recordings.empty() || speaker.recordings.back() != recording.recording) {
        speaker.recordings.push_back(recording.recording);
      }
      if (s < recording.speech_seconds.size())
        speaker.speech_seconds += recording.speech_seconds[s];
    }
    linking.global_of.push_back(std::move(assigned));
  }
  for (std::size_t g = 0; g < globals.size(); ++g) {
    const double members = static_cast<double>(linking.speakers[g].recordings.size());
    linking.speakers[g].centroid = globals[g].embeddings.front();
    for (float& value : linking.speakers[g].centroid) {
      value = static_cast<float>(value / std::max(members, 1.0));
    }
  }
  return linking;
}

void name_linked_speakers(Linking& linking, std::span<const Candidate> candidates) {
  if (linking.speakers.empty() || candidates.empty()) return;
  const std::size_t dimension = linking.speakers.front().centroid.size();
  NdArray<float> centroids({linking.speakers.size(), dimension});
  for (std::size_t g = 0; g < linking.speakers.size(); ++g) {
    std::copy(linking.speakers[g].centroid.begin(), linking.speakers[g].centroid.end(),
              centroids.data() + g * dimension);
  }
  const NdArray<double> scores = score_matrix(centroids, candidates);
  for (const Match& match : exclusive_matches(scores, linking.threshold)) {
    GlobalSpeaker& speaker = linking.speakers[match.row];
    speaker.name = candidates[match.column].name;
    speaker.label = speaker.name;
    speaker.score = match.score;
    speaker.confidence = match.confidence;
  }
}

void apply_linking(const Linking& linking, std::size_t index, pipeline::DiarizationResult& result) {
  const auto& globals = linking.global_of.at(index);
  for (auto* turns : {&result.turns, &result.exclusive_turns}) {
    for (frames::Turn& turn : *turns) {
      if (turn.speaker_index >= 0 &&
          static_cast<std::size_t>(turn.speaker_index) < globals.size()) {
        turn.speaker =
            linking.speakers[globals[static_cast<std::size_t>(turn.speaker_index)]].label;
      }
    }
  }
}

std::string speakers_table(const Linking& linking) {
  std::string table =
      "label\tname\trecordings\tspeech_seconds\tscore\tconfidence\trecording_list\n";
  for (const GlobalSpeaker& speaker : linking.speakers) {
    std::string list;
    for (const auto& recording : speaker.recordings) list += (list.empty() ? "" : ",") + recording;
    table += fmt::format(
        "{}\t{}\t{}\t{:.3f}\t{}\t{}\t{}\n", speaker.label, speaker.name, speaker.recordings.size(),
        speaker.speech_seconds, speaker.name.empty() ? "" : fmt::format("{:.4f}", speaker.score),
        speaker.name.empty() ? "" : fmt::format("{:.4f}", speaker.confidence), list);
  }
  return table;
}

}  // namespace parley::identity
