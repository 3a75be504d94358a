#include "identity/library_namer.h"

#include <spdlog/spdlog.h>

#include "core/error.h"
#include "core/sha256.h"
#include "identity/named_output.h"
#include "identity/speaker_library.h"
#include "identity/voiceprint.h"

namespace parley::identity {

LibraryNamer::LibraryNamer(const std::filesystem::path& library, double threshold,
                           const std::filesystem::path& embedding_model)
    : threshold_(threshold), named_library_(true) {
  const SpeakerLibrary opened(library);
  const auto entries = opened.list();
  if (entries.empty()) {
    spdlog::warn("{}: the speaker library is empty; no speaker will be named", library.string());
  }
  try {
    candidates_ = library_candidates(entries, embedding_model_digest(embedding_model));
  } catch (const Error& error) {
    fail("{}: {}", library.string(), error.what());
  }
  library_digest_ = sha256_text(opened.export_json());
}

nlohmann::ordered_json LibraryNamer::settings() const {
  if (!named_library_) return nullptr;
  return {{"library_sha256", library_digest_},
          {"threshold", threshold_},
          {"named_output", kNamedOutputVersion}};
}

Identification LibraryNamer::identify(pipeline::DiarizationResult& result) const {
  if (!named_library_) {
    Identification none;
    none.threshold = threshold_;
    return none;
  }
  return identity::identify(result, candidates_, threshold_);
}

std::string LibraryNamer::format(pipeline::DiarizationResult result, std::string_view format,
                                 const pipeline::ResultFormatOptions& options) const {
  if (!named_library_) return pipeline::format_result(result, format, options);
  const Identification identification = identify(result);
  return format_identified(result, identification, format, options);
}

std::function<Identification(pipeline::DiarizationResult&)> library_identifier(
    const std::filesystem::path& library, double threshold,
    const std::filesystem::path& embedding_model) {
  static_cast<void>(LibraryNamer(library, threshold, embedding_model));  // fails on a foreign one
  const std::string digest = embedding_model_digest(embedding_model);
  return [library, threshold, digest](pipeline::DiarizationResult& result) {
    try {
      const SpeakerLibrary opened(library);
      return identity::identify(result, library_candidates(opened.list(), digest), threshold);
    } catch (const Error& error) {
      spdlog::error("{}: {}: speakers left unnamed", library.string(), error.what());
      Identification none;
      none.threshold = threshold;
      return none;
    }
  };
}

}  // namespace parley::identity
