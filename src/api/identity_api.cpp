// The C API's speaker library and identification (parley.h, "Who is speaking, by name"): a thin
// face over identity/ (docs/identity.md).
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "api/handles.h"
#include "frames/output.h"
#include "frames/segments.h"
#include "identity/identification.h"
#include "identity/named_output.h"
#include "identity/speaker_library.h"
#include "identity/voiceprint.h"
#include "parley/parley.h"
#include "stages/shared_trunk.h"

// The C header cannot include C++, so it writes the engine's default again; this keeps the two one.
static_assert(PARLEY_DEFAULT_IDENTIFY_THRESHOLD == parley::identity::kDefaultThreshold,
              "PARLEY_DEFAULT_IDENTIFY_THRESHOLD must equal identity::kDefaultThreshold");

struct parley_library {
  std::unique_ptr<parley::identity::SpeakerLibrary> library;
  std::string list_json;
  std::string export_json;
};

struct parley_identification {
  parley::identity::Identification identification;
  std::vector<int> speakers;  // result speaker index per named speaker
  std::string json;
  parley::pipeline::DiarizationResult named;  // the result with the names, for its formats
};

namespace {

using parley::api::invalid_argument;

template <typename Handle>
void require(const Handle* handle, const char* function, const char* name) {
  if (handle == nullptr) invalid_argument(fmt::format("{}: {} must not be NULL", function, name));
}

std::string digest_of(const parley_diarizer& diarizer) {
  return parley::identity::embedding_model_digest(parley::api::embedding_model_of(diarizer));
}

}  // namespace

extern "C" {

parley_status parley_library_open(const char* path, parley_library** library) {
  return parley::api::run_guarded([&] {
    require(library, "parley_library_open", "library");
    *library = nullptr;
    require(path, "parley_library_open", "path");
    auto handle = std::make_unique<parley_library>();
    handle->library = std::make_unique<parley::identity::SpeakerLibrary>(path);
    *library = handle.release();
  });
}

void parley_library_free(parley_library* library) { delete library; }

parley_status parley_library_add(parley_library* library, const char* name,
                                 const parley_diarizer* diarizer, const parley_result* result,
                                 size_t speaker, long long* id) {
  return parley::api::run_guarded([&] {
    require(library, "parley_library_add", "library");
    require(name, "parley_library_add", "name");
    require(diarizer, "parley_library_add", "diarizer");
    require(result, "parley_library_add", "result");
    const auto& diarization = parley::api::diarization_of(*result);
    const auto& embeddings = diarization.speaker_embeddings;
    if (embeddings.rank() != 2 || speaker >= embeddings.dim(0)) {
      invalid_argument(fmt::format("parley_library_add: the result has no speaker {} (it has {})",
                                   speaker, embeddings.rank() == 2 ? embeddings.dim(0) : 0));
    }
    parley::identity::Voiceprint voiceprint{parley::identity::embedding_row(embeddings, speaker),
                                            digest_of(*diarizer), ""};
    if (const std::string why = parley::identity::why_not_comparable(voiceprint.embedding);
        !why.empty()) {
      invalid_argument(
          fmt::format("parley_library_add: speaker {} cannot give a voiceprint, {}", speaker, why));
    }
    const long long added = library->library->add(
        name, voiceprint,
        fmt::format("{} {}", diarization.uri, parley::frames::speaker_label(speaker)));
    if (id != nullptr) *id = added;
  });
}

const char* parley_library_list_json(parley_library* library) {
  const char* answer = nullptr;
  const parley_status status = parley::api::run_guarded([&] {
    require(library, "parley_library_list_json", "library");
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& entry : library->library->list()) {
      list.push_back(parley::identity::listing_json(entry));
    }
    library->list_json = list.dump();
    answer = library->list_json.c_str();
  });
  return status == PARLEY_OK ? answer : nullptr;
}

parley_status parley_library_remove(parley_library* library, const char* name, size_t* removed) {
  return parley::api::run_guarded([&] {
    require(library, "parley_library_remove", "library");
    require(name, "parley_library_remove", "name");
    const std::size_t count = library->library->remove(name);
    if (removed != nullptr) *removed = count;
  });
}

parley_status parley_library_rename(parley_library* library, const char* from, const char* to,
                                    int merge, size_t* renamed) {
  return parley::api::run_guarded([&] {
    require(library, "parley_library_rename", "library");
    require(from, "parley_library_rename", "from");
    require(to, "parley_library_rename", "to");
    std::size_t count = 0;
    try {
      count = library->library->rename(from, to, merge != 0);
    } catch (const parley::Error& error) {
      invalid_argument(fmt::format("parley_library_rename: {}", error.what()));
    }
    if (renamed != nullptr) *renamed = count;
  });
}

const char* parley_library_export_json(parley_library* library) {
  const char* answer = nullptr;
  const parley_status status = parley::api::run_guarded([&] {
    require(library, "parley_library_export_json", "library");
    library->export_json = library->library->export_json();
    answer = library->export_json.c_str();
  });
  return status == PARLEY_OK ? answer : nullptr;
}

parley_status parley_library_import_json(parley_library* library, const char* document,
                                         const parley_diarizer* diarizer, size_t* imported) {
  return parley::api::run_guarded([&] {
    require(library, "parley_library_import_json", "library");
    require(document, "parley_library_import_json", "document");
    const std::string digest = diarizer != nullptr ? digest_of(*diarizer) : std::string();
    std::size_t count = 0;
    try {
      count = library->library->import_json(document, digest);
    } catch (const parley::Error& error) {
      invalid_argument(fmt::format("parley_library_import_json: {}", error.what()));
    }
    if (imported != nullptr) *imported = count;
  });
}

parley_status parley_identify(parley_library* library, const parley_diarizer* diarizer,
                              const parley_result* result, double threshold,
                              parley_identification** identification) {
  return parley::api::run_guarded([&] {
    require(identification, "parley_identify", "identification");
    *identification = nullptr;
    require(library, "parley_identify", "library");
    require(diarizer, "parley_identify", "diarizer");
    require(result, "parley_identify", "result");
    if (!std::isfinite(threshold) || threshold < -1.0 || threshold > 1.0) {
      invalid_argument(
          fmt::format("parley_identify: threshold must be from -1 to 1 (got {})", threshold));
    }
    const auto candidates =
        parley::identity::library_candidates(library->library->list(), digest_of(*diarizer));
    parley::pipeline::DiarizationResult named = parley::api::diarization_of(*result);
    auto handle = std::make_unique<parley_identification>();
    handle->identification = parley::identity::identify(named, candidates, threshold);
    for (const auto& speaker : handle->identification.named) {
      handle->speakers.push_back(std::stoi(speaker.label.substr(speaker.label.rfind('_') + 1)));
    }
    handle->json = parley::identity::add_identification_json(
        parley::frames::format_json(named.turns, named.exclusive_turns, named.speaker_embeddings),
        handle->identification);
    handle->named = std::move(named);
    *identification = handle.release();
  });
}

size_t parley_identification_count(const parley_identification* identification) {
  return identification == nullptr ? 0 : identification->identification.named.size();
}

parley_named_speaker parley_identification_speaker(const parley_identification* identification,
                                                   size_t index) {
  if (index >= parley_identification_count(identification)) return {-1, "", 0.0, 0.0};
  const auto& named = identification->identification.named[index];
  return {identification->speakers[index], named.name.c_str(), named.score, named.confidence};
}

const char* parley_identification_json(const parley_identification* identification) {
  return identification == nullptr ? nullptr : identification->json.c_str();
}

char* parley_identification_format(const parley_identification* identification, const char* format,
                                   int exclusive, const char* uri) {
  char* answer = nullptr;
  static_cast<void>(parley::api::run_guarded([&] {
    require(identification, "parley_identification_format", "identification");
    if (format == nullptr) invalid_argument("parley_identification_format: format is NULL");
    parley::pipeline::ResultFormatOptions options;
    options.exclusive = exclusive != 0;
    options.uri = uri != nullptr ? std::string(uri) : identification->named.uri;
    std::string text;
    // The writer's checks (a uri RTTM cannot hold, an unknown format), named by the function.
    try {
      text = parley::identity::format_identified(identification->named,
                                                 identification->identification, format, options);
    } catch (const parley::Error& error) {
      invalid_argument(fmt::format("parley_identification_format: {}", error.what()));
    }
    // malloc, not new: parley_free releases it, and a binding may hand it to free().
    answer = static_cast<char*>(std::malloc(text.size() + 1));
    if (answer == nullptr) throw std::bad_alloc();
    std::memcpy(answer, text.c_str(), text.size() + 1);
  }));
  return answer;
}

void parley_identification_free(parley_identification* identification) { delete identification; }

}  // extern "C"
