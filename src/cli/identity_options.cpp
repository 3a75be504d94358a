#include "cli/identity_options.h"

#include <limits>

#include <spdlog/spdlog.h>

#include "core/error.h"
#include "core/sha256.h"
#include "frames/output.h"
#include "frames/segments.h"
#include "identity/speaker_library.h"
#include "identity/voiceprint.h"

namespace parley::cli {

void add_threshold_flag(CLI::App& command, double& threshold) {
  command
      .add_option("--identify-threshold", threshold,
                  "cosine score at or above which a speaker and a voiceprint match (-1 to 1; "
                  "`parley voiceprint evaluate` measures it on labelled recordings)")
      ->check(number_between(-1.0, 1.0))
      ->capture_default_str();
}

void add_identity_flags(CLI::App& command, IdentityFlags& flags) {
  command
      .add_option("--voiceprints", flags.voiceprints,
                  "speaker library (from `parley voiceprint add`): name the speakers that "
                  "match one of its voiceprints")
      ->check(CLI::ExistingFile);
  add_threshold_flag(command, flags.threshold);
  command.add_flag("--link-speakers", flags.link_speakers,
                   "give one speaker the same global label in every recording of the run, and "
                   "write a speakers table (names from --voiceprints win)");
  command.add_option("--speakers-table", flags.speakers_table,
                     "where --link-speakers writes its table (default: <out-dir>/speakers.tsv)");
}

ResultNamer::ResultNamer(const IdentityFlags& flags, const std::filesystem::path& embedding_model)
    : threshold_(flags.threshold) {
  if (!flags.naming()) return;
  named_library_ = true;
  const identity::SpeakerLibrary library(flags.voiceprints);
  const auto entries = library.list();
  if (entries.empty()) {
    spdlog::warn("{}: the speaker library is empty; no speaker will be named", flags.voiceprints);
  }
  try {
    candidates_ =
        identity::library_candidates(entries, identity::embedding_model_digest(embedding_model));
  } catch (const Error& error) {
    fail("{}: {}", flags.voiceprints, error.what());
  }
  library_digest_ = sha256_text(library.export_json());
}

nlohmann::ordered_json ResultNamer::settings() const {
  if (!named_library_) return nullptr;
  return {{"library_sha256", library_digest_}, {"threshold", threshold_}};
}

std::string ResultNamer::format(pipeline::DiarizationResult result,
                                const DiarizationFlags& flags) const {
  if (!named_library_) return format_result(result, flags);
  const identity::Identification identification =
      identity::identify(result, candidates_, threshold_);
  std::string text = format_result(result, flags);
  if (flags.format == "json") text = identity::add_identification_json(text, identification);
  return text;
}

std::function<identity::Identification(pipeline::DiarizationResult&)> library_identifier(
    const std::string& library, double threshold, const std::filesystem::path& embedding_model) {
  IdentityFlags flags;
  flags.voiceprints = library;
  flags.threshold = threshold;
  static_cast<void>(ResultNamer(flags, embedding_model));  // fails now on a foreign library
  const std::string digest = identity::embedding_model_digest(embedding_model);
  return [library, threshold, digest](pipeline::DiarizationResult& result) {
    try {
      const identity::SpeakerLibrary opened(library);
      return identity::identify(result, identity::library_candidates(opened.list(), digest),
                                threshold);
    } catch (const Error& error) {
      spdlog::error("{}: {}: speakers left unnamed", library, error.what());
      identity::Identification none;
      none.threshold = threshold;
      return none;
    }
  };
}

std::string format_linked(pipeline::DiarizationResult result, const identity::Linking& linking,
                          std::size_t index, const DiarizationFlags& flags) {
  identity::apply_linking(linking, index, result);
  std::string text = format_result(result, flags);
  if (flags.format != "json") return text;
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
    const std::string why = identity::why_not_comparable(values);
    embeddings[global.label] = std::move(embedding);
    nlohmann::ordered_json speaker = {{"label", pipeline::speaker_label(local)},
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

}  // namespace parley::cli
