#pragma once
// `parley diarize --voiceprints LIB [--link-speakers]`: names from a speaker library and global
// labels across a corpus (identity/), as the diarize command writes them. Kept apart from the
// diarization flags so that the naming stays one call in each place that writes a result.
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/diarization_options.h"
#include "identity/identification.h"
#include "identity/library_namer.h"
#include "identity/speaker_linking.h"

namespace parley::cli {

struct IdentityFlags {
  std::string voiceprints;  // the speaker library (SQLite file); empty: no names
  double threshold = identity::kDefaultThreshold;
  bool link_speakers = false;
  std::string
      speakers_table;  // where --link-speakers writes its table; empty: <out-dir>/speakers.tsv

  bool naming() const { return !voiceprints.empty(); }
};

// --voiceprints, --identify-threshold, --link-speakers, --speakers-table (the option table's).
void add_identity_flags(CLI::App& command, IdentityFlags& flags);
// --identify-threshold alone (the voiceprint commands that score).
void add_threshold_flag(CLI::App& command, double& threshold);

// The library's voiceprints for the embedding model in use, read once, before any diarization:
// a library of another model fails at once (identity::LibraryNamer, with the flags' values).
class ResultNamer {
 public:
  ResultNamer() = default;
  ResultNamer(const IdentityFlags& flags, const std::filesystem::path& embedding_model);

  bool naming() const { return namer_.naming(); }
  double threshold() const { return threshold_; }
  const std::vector<identity::Candidate>& candidates() const { return namer_.candidates(); }
  // What the run's settings record: a rerun with another library or threshold is not skipped.
  nlohmann::ordered_json settings() const { return namer_.settings(); }
  const identity::LibraryNamer& namer() const { return namer_; }

  // Names the clusters of `result` (its turns renamed) and formats it as the flags say, with
  // the names' scores (identity/named_output.h). Without a library, format_result as it is.
  std::string format(pipeline::DiarizationResult result, const DiarizationFlags& flags) const;

 private:
  identity::LibraryNamer namer_;
  double threshold_ = identity::kDefaultThreshold;
};

// identity::library_identifier, for `parley serve --voiceprints`.
std::function<identity::Identification(pipeline::DiarizationResult&)> library_identifier(
    const std::string& library, double threshold, const std::filesystem::path& embedding_model);

// A linked corpus result in the format the flags say (identity::format_linked).
std::string format_linked(pipeline::DiarizationResult result, const identity::Linking& linking,
                          std::size_t index, const DiarizationFlags& flags);

}  // namespace parley::cli
