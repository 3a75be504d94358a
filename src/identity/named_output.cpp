#include "identity/named_output.h"

#include <limits>

#include <nlohmann/json.hpp>

#include "frames/output.h"
#include "frames/segments.h"
#include "identity/voiceprint.h"

namespace parley::identity {

std::vector<pipeline::SpeakerScore> speaker_scores(const Identification& identification) {
  std::vector<pipeline::SpeakerScore> scores;
  scores.reserve(identification.named.size());
  for (const NamedSpeaker& named : identification.named) {
    scores.push_back({named.name, named.score, named.confidence});
  }
  return scores;
}

std::string format_identified(const pipeline::DiarizationResult& named,
                              const Identification& identification, std::string_view format,
                              pipeline::ResultFormatOptions options) {
  const std::vector<pipeline::SpeakerScore> scores = speaker_scores(identification);
  options.speaker_scores = scores;
  std::string text = pipeline::format_result(named, format, options);
  if (format == "json") text = add_identification_json(text, identification);
  return text;
}

std::string format_linked(pipeline::DiarizationResult result, const Linking& linking,
                          std::size_t index, std::string_view format,
                          pipeline::ResultFormatOptions options) {
  apply_linking(linking, index, result);
  std::vector<pipeline::SpeakerScore> scores;
  for (const GlobalSpeaker& global : linking.speakers) {
    if (!global.name.empty()) scores.push_back({global.label, global.score, global.confidence});
  }
  options.speaker_scores = scores;
  std::string text = pipeline::format_result(result, format, options);
  if (format != "json") return text;
  nlohmann::ordered_json document = nlohmann::ordered_json::parse(text);
  const auto& globals = linking.global_of.at(index);
  nlohmann::ordered_json embeddings = nlohmann::ordered_json::object();
  nlohmann::ordered_json speakers = nlohmann::ordered_json::array();
  std::size_t local = 0;
  for (auto& [label, embedding] : document["speaker_embeddings"].items()) {
    const auto& global = linking.speakers[globals.at(local)];
    // A speaker without a centroid got a global label of its own: say why it was not linked.
    std::vector<float> values;
    for (const auto& value : embedding) {
      // NaN is written as null.
      values.push_back(value.is_number() ? value.get<float>()
                                         : std::numeric_limits<float>::quiet_NaN());
    }
    const std::string why = why_not_comparable(values);
    embeddings[global.label] = std::move(embedding);
    nlohmann::ordered_json speaker = {{"label", frames::speaker_label(local)},
                                      {"global", global.label}};
    if (!global.name.empty()) {
      speaker["name"] = global.name;
      speaker["score"] = global.score;
      speaker["confidence"] = global.confidence;
    }
    if (!why.empty()) speaker["reason"] = why;
    speakers.push_back(std::move(speaker));
    ++local;
  }
  document["speaker_embeddings"] = std::move(embeddings);
  document["speaker_linking"] = {{"threshold", linking.threshold}, {"speakers", speakers}};
  return document.dump(2) + "\n";
}

}  // namespace parley::identity
