#pragma once
// The same speaker across the recordings of a corpus: one global label per speaker.
// Recordings are taken in order; each recording's speakers are matched to the global speakers
// found so far with identification's scoring, threshold and exclusive optimal matching
// (identity/identification.h): a speaker that matches joins that global speaker (whose centroid
// becomes the mean of its members' unit-length centroids), one that does not starts a new one.
// Two speakers of one recording never join the same global speaker. A speaker without a centroid
// (a zero embedding: pyannote pads a cluster that had no clean speech so) scores NaN against
// everything and gets a global label of its own. The result depends on the
// order of the recordings only where a speaker is near the threshold.
// With a library, each global speaker is then identified (the same matching, on the global
// centroids): a name wins over the global label.
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "core/ndarray.h"
#include "identity/identification.h"
#include "pipeline/diarizer.h"

namespace parley::identity {

// What linking needs of one recording's diarization.
struct RecordingSpeakers {
  std::string recording;
  NdArray<float> centroids;            // [speakers, D]: DiarizationResult::speaker_embeddings
  std::vector<double> speech_seconds;  // per speaker
};

RecordingSpeakers recording_speakers(const pipeline::DiarizationResult& result);

struct GlobalSpeaker {
  std::string label;  // GLOBAL_00..., or the library name
  std::vector<float> centroid;
  std::vector<std::string> recordings;
  double speech_seconds = 0.0;
  std::string name;  // the library's name, when one matched
  double score = 0.0;
  double confidence = 0.0;
};

struct Linking {
  std::vector<GlobalSpeaker> speakers;
  // global_of[r][s]: the global speaker of speaker s of recording r.
  std::vector<std::vector<std::size_t>> global_of;
  double threshold = kDefaultThreshold;

  // The label speaker s of recording r carries.
  const std::string& label(std::size_t recording, std::size_t speaker) const {
    return speakers[global_of[recording][speaker]].label;
  }
};

Linking link_speakers(std::span<const RecordingSpeakers> recordings,
                      double threshold = kDefaultThreshold);

// Names the global speakers that match `candidates` (their label becomes the name).
void name_linked_speakers(Linking& linking, std::span<const Candidate> candidates);

// Renames the turns of `result` (recording `index` of the linking) to the global labels.
void apply_linking(const Linking& linking, std::size_t index, pipeline::DiarizationResult& result);

// The speakers table, tab-separated with a header: label, name, recordings (count), speech
// seconds, score, confidence, the recordings (comma-separated).
std::string speakers_table(const Linking& linking);

}  // namespace parley::identity
