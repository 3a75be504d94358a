#pragma once
// Naming results from a speaker library file, as every face that takes one does (`parley
// diarize --voiceprints`, `parley serve --voiceprints`): the library read and checked against the
// embedding model in use before any diarization, so that a library of another model fails at
// once, not after an hour of work.
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "identity/identification.h"
#include "pipeline/result_writer.h"

namespace parley::identity {

// The library's voiceprints for one embedding model, read once.
class LibraryNamer {
 public:
  // Names nothing.
  LibraryNamer() = default;
  // Fails, naming `library`, when a voiceprint there was made by another embedding model than
  // `embedding_model`; warns when the library is empty.
  LibraryNamer(const std::filesystem::path& library, double threshold,
               const std::filesystem::path& embedding_model);

  bool naming() const { return named_library_; }
  double threshold() const { return threshold_; }
  const std::vector<Candidate>& candidates() const { return candidates_; }

  // What a resumable run's settings record (corpus/run_record.h), so that a rerun with another
  // library, threshold or way of writing names is not skipped: {"library_sha256", "threshold",
  // "named_output"}; null when naming nothing. "named_output" is kNamedOutputVersion.
  nlohmann::ordered_json settings() const;
  // Bumped when named outputs change shape (2: scores in every format), so that out-dir runs
  // written the older way are redone once.
  static constexpr int kNamedOutputVersion = 2;

  // Names the clusters of `result` (what identify() does); an empty identification (threshold
  // kept) when naming nothing.
  Identification identify(pipeline::DiarizationResult& result) const;

  // `result` named and written as `format` (format_identified); without a library,
  // format_result as it is.
  std::string format(pipeline::DiarizationResult result, std::string_view format,
                     const pipeline::ResultFormatOptions& options = {}) const;

 private:
  std::vector<Candidate> candidates_;
  double threshold_ = kDefaultThreshold;
  bool named_library_ = false;
  std::string library_digest_;
};

// For a long-lived face (`parley serve --voiceprints`): names each result from the library as it
// is when the result comes (voiceprints added meanwhile count; each call opens its own
// connection). A library of another model fails here, at once; one that goes wrong later leaves
// that result unnamed, with an error in the log.
std::function<Identification(pipeline::DiarizationResult&)> library_identifier(
    const std::filesystem::path& library, double threshold,
    const std::filesystem::path& embedding_model);

}  // namespace parley::identity
