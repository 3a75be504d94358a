#include "identity/voiceprint.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/sha256.h"
#include "core/stage_timer.h"
#include "stages/shared_trunk.h"

namespace parley::identity {

std::string embedding_model_digest(const std::filesystem::path& embedding_model) {
  return sha256_file(embedding_model);
}

void check_model(const Voiceprint& voiceprint, std::string_view digest, std::string_view what) {
  if (voiceprint.model_digest == digest) return;
  fail(
      "{} was computed by another embedding model (sha256 {}...) than the one in use (sha256 "
      "{}...): embeddings of different models cannot be compared; compute the voiceprint again "
      "with this model",
      what, voiceprint.model_digest.substr(0, 12), std::string(digest.substr(0, 12)));
}

std::string why_not_comparable(std::span<const float> centroid) {
  if (centroid.empty()) return "no centroid";
  bool nonzero = false;
  for (const float value : centroid) {
    if (!std::isfinite(value)) return "its centroid is not finite";
    nonzero = nonzero || value != 0.0F;
  }
  if (!nonzero) {
    return "no centroid: the clustering found no clean (single-speaker) speech of this speaker "
           "to embed, only speech overlapping others (its centroid is zeros, as pyannote pads)";
  }
  return {};
}

std::vector<float> embedding_row(const NdArray<float>& embeddings, std::size_t row) {
  if (embeddings.rank() != 2 || row >= embeddings.dim(0)) {
    fail("no speaker embedding {} (the result has {})", row,
         embeddings.rank() == 2 ? embeddings.dim(0) : 0);
  }
  const float* begin = embeddings.data() + row * embeddings.dim(1);
  return {begin, begin + embeddings.dim(1)};
}

Voiceprint voiceprint_from_samples(pipeline::Diarizer& diarizer, std::span<const float> samples,
                                   const std::string& uri, std::string_view model_digest,
                                   ProgressSink& progress) {
  std::vector<StageTimes> times(1);
  const std::span<const float> recordings[] = {samples};
  const auto intermediates = diarizer.segment_and_embed(recordings, times, progress);
  cluster::SpeakerCountConstraints one;
  one.num_speakers = 1;
  return voiceprint_from_one_speaker(
      diarizer.cluster(intermediates.front(), uri, times.front(), one), uri, model_digest,
      stages::embedding_mode_name(diarizer.config().embedding_mode));
}

Voiceprint voiceprint_from_one_speaker(const pipeline::DiarizationResult& result,
                                       const std::string& uri, std::string_view model_digest,
                                       std::string_view embedding_mode) {
  if (result.speaker_count == 0 || result.speaker_embeddings.rank() != 2 ||
      result.speaker_embeddings.dim(0) == 0) {
    fail("{}: no speech found, so no voiceprint; give audio where the speaker talks", uri);
  }
  Voiceprint voiceprint{embedding_row(result.speaker_embeddings, 0), std::string(model_digest),
                        std::string(embedding_mode)};
  if (const std::string why = why_not_comparable(voiceprint.embedding); !why.empty()) {
    fail("{}: no voiceprint, {}; give audio where the speaker talks alone", uri, why);
  }
  return voiceprint;
}

namespace {

nlohmann::json parse_result(std::string_view document) {
  try {
    return nlohmann::json::parse(document);
  } catch (const nlohmann::json::exception& error) {
    fail("not a diarization result in JSON: {}", error.what());
  }
}

}  // namespace

Voiceprint voiceprint_from_result_json(std::string_view document, std::string_view speaker,
                                       std::string_view model_digest,
                                       std::string_view embedding_mode) {
  const nlohmann::json parsed = parse_result(document);
  const auto embeddings = parsed.find("speaker_embeddings");
  if (!parsed.is_object() || embeddings == parsed.end() || !embeddings->is_object()) {
    fail("the result has no speaker_embeddings (the JSON result of a diarization holds them)");
  }
  auto row = embeddings->find(std::string(speaker));
  // Identification keys a named speaker's embedding by its name.
  if (row == embeddings->end() && parsed.contains("identification") &&
      parsed["identification"].is_object() && parsed["identification"].contains("speakers") &&
      parsed["identification"]["speakers"].is_array()) {
    for (const auto& named : parsed["identification"]["speakers"]) {
      if (named.is_object() && named.value("label", "") == speaker && named.contains("name") &&
          named["name"].is_string()) {
        row = embeddings->find(named["name"].get<std::string>());
      }
    }
  }
  if (row == embeddings->end()) {
    std::string known;
    for (const auto& [key, value] : embeddings->items()) known += (known.empty() ? "" : ", ") + key;
    fail("the result has no speaker {} (it has: {})", speaker, known.empty() ? "none" : known);
  }
  Voiceprint voiceprint{{}, std::string(model_digest), std::string(embedding_mode)};
  if (!row->is_array() || row->empty()) fail("speaker {}'s embedding is not a list", speaker);
  for (const auto& value : *row) {
    if (!value.is_number() || !std::isfinite(value.get<double>())) {
      fail("speaker {}'s embedding holds a value that is not a finite number", speaker);
    }
    voiceprint.embedding.push_back(value.get<float>());
  }
  if (const std::string why = why_not_comparable(voiceprint.embedding); !why.empty()) {
    fail(
        "speaker {} cannot give a voiceprint, {}; add this speaker from audio where it talks "
        "alone",
        speaker, why);
  }
  return voiceprint;
}

Voiceprint voiceprint_from_one_speaker_json(std::string_view document, std::string_view uri,
                                            std::string_view model_digest,
                                            std::string_view embedding_mode) {
  const nlohmann::json parsed = parse_result(document);
  const auto embeddings = parsed.find("speaker_embeddings");
  if (!parsed.is_object() || embeddings == parsed.end() || !embeddings->is_object() ||
      embeddings->empty()) {
    fail("{}: no speech found, so no voiceprint; give audio where the speaker talks", uri);
  }
  if (embeddings->size() != 1) {
    fail("{}: the result has {} speakers, not the one a voiceprint is made of", uri,
         embeddings->size());
  }
  // Its only speaker, under whatever label or name it carries.
  try {
    return voiceprint_from_result_json(document, embeddings->begin().key(), model_digest,
                                       embedding_mode);
  } catch (const Error& error) {
    fail("{}: no voiceprint, {}; give audio where the speaker talks alone", uri, error.what());
  }
}

}  // namespace parley::identity
