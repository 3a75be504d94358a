#pragma once
// A voiceprint: the embedding of one speaker, computed as the pipeline computes a speaker's
// centroid (clustering's centroid of that speaker's chunk embeddings, DiarizationResult's
// speaker_embeddings row), with the identity of the embedding model that computed it. Embeddings
// of different models (or of the real model and its speed twin) live in unrelated spaces, so a
// voiceprint is only ever compared under the model whose sha256 digest it records.
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/ndarray.h"
#include "core/progress.h"
#include "pipeline/diarizer.h"

namespace parley::identity {

struct Voiceprint {
  std::vector<float> embedding;
  std::string model_digest;    // sha256 of the embedding model file, lower-case hex
  std::string embedding_mode;  // stages::embedding_mode_name of the run that computed it
};

// The identity a voiceprint records: the sha256 digest of the embedding model file.
std::string embedding_model_digest(const std::filesystem::path& embedding_model);

// Fails, saying what to do, unless `voiceprint` was computed by the model of digest `digest`
// (`what` names the voiceprint in the message).
void check_model(const Voiceprint& voiceprint, std::string_view digest, std::string_view what);

// One speaker's voiceprint from 16 kHz mono samples: the whole span is diarized with exactly one
// speaker (DiarizationConfig's clustering, speaker count forced to 1) and the centroid of that
// speaker is the voiceprint. Fails when the span holds no speech.
Voiceprint voiceprint_from_samples(pipeline::Diarizer& diarizer, std::span<const float> samples,
                                   const std::string& uri, std::string_view model_digest,
                                   ProgressSink& progress);

// The voiceprint of a recording diarized with the speaker count forced to 1: its one speaker's
// centroid. Fails, naming `uri`, when the result holds no speech or no comparable centroid.
Voiceprint voiceprint_from_one_speaker(const pipeline::DiarizationResult& result,
                                       const std::string& uri, std::string_view model_digest,
                                       std::string_view embedding_mode);

// The voiceprint of `speaker` (a key of "speaker_embeddings", SPEAKER_xx or a name; a SPEAKER_xx
// that identification named is found through the document's "identification") in the JSON
// document `parley diarize --format json` wrote. The document does not say which model computed
// it: the caller states it (`model_digest`, `embedding_mode`).
Voiceprint voiceprint_from_result_json(std::string_view document, std::string_view speaker,
                                       std::string_view model_digest,
                                       std::string_view embedding_mode);

// The voiceprint of a recording diarized with the speaker count forced to 1, from its JSON
// result: what voiceprint_from_samples gives when another part (`parley serve`'s queue) ran the
// pipeline. `uri` names the recording in the messages.
Voiceprint voiceprint_from_one_speaker_json(std::string_view document, std::string_view uri,
                                            std::string_view model_digest,
                                            std::string_view embedding_mode);

// Why `centroid` cannot be compared with anything (cosine similarity needs a direction), or
// empty when it can. pyannote pads a speaker that the clustering found no clean (single-speaker)
// speech for with a zero centroid; such a speaker keeps its turns but cannot be named or linked.
// Making one up from its overlapped speech would mix in the voices it overlaps, and a wrong name
// costs more than a missing one, so it is reported instead.
std::string why_not_comparable(std::span<const float> centroid);

// Row `row` of a [speakers, D] array as a vector.
std::vector<float> embedding_row(const NdArray<float>& embeddings, std::size_t row);

}  // namespace parley::identity
