#pragma once
// A speaker library: named voiceprints in one SQLite file. A name may hold several voiceprints
// (other microphones, other days); identification scores a cluster against the best of them.
// Several threads and processes may use one file at once: every SpeakerLibrary holds its own
// connection, the file is in WAL mode (readers never wait for a writer) and a writer waits up to
// kBusyTimeoutMs for another instead of failing.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "identity/voiceprint.h"

struct sqlite3;

namespace parley::identity {

struct LibraryEntry {
  std::int64_t id = 0;
  std::string name;
  Voiceprint voiceprint;
  std::string source;   // where it came from: "file.wav", "file.wav 12.0-31.5", "r.json SPEAKER_01"
  std::string created;  // UTC, ISO 8601 ("2026-11-26T21:04:05Z")
};

// Names label turns in every output format (an RTTM field, a JSON string, a text column), so a
// name is 1 to 128 bytes of UTF-8 without white space or control characters, and not one of the
// labels unnamed speakers carry (SPEAKER_<digits>, GLOBAL_<digits>). Fails saying so.
void check_speaker_name(std::string_view name);

// What a listing says of one voiceprint (`parley voiceprint list --json`, the C API's
// parley_library_list_json, `parley serve`'s GET /v1/voiceprints): {"id", "name", "source",
// "created", "model_sha256", "embedding_mode", "dimension"}; the embedding itself only in exports.
nlohmann::ordered_json listing_json(const LibraryEntry& entry);

class SpeakerLibrary {
 public:
  static constexpr int kBusyTimeoutMs = 10000;

  // Opens `file`, creating it (and its schema) when it does not exist.
  explicit SpeakerLibrary(const std::filesystem::path& file);
  ~SpeakerLibrary();
  SpeakerLibrary(const SpeakerLibrary&) = delete;
  SpeakerLibrary& operator=(const SpeakerLibrary&) = delete;

  const std::filesystem::path& file() const { return file_; }

  // Adds one voiceprint under `name`; returns its id. `created` empty: now.
  std::int64_t add(const std::string& name, const Voiceprint& voiceprint, const std::string& source,
                   const std::string& created = {});
  // Every voiceprint, by name then id.
  std::vector<LibraryEntry> list() const;
  // Renames every voiceprint of `from`; returns how many (0: no such name). Fails when `to`
  // already names voiceprints, unless `merge`.
  std::size_t rename(const std::string& from, const std::string& to, bool merge = false);
  // Removes every voiceprint of `name`; returns how many.
  std::size_t remove(const std::string& name);

  // The whole library as JSON: {"format": "parley-speaker-library", "version": 1,
  // "voiceprints": [{"name", "source", "created", "model_sha256", "embedding_mode",
  // "embedding": [D floats]}...]}.
  std::string export_json() const;
  // Adds every voiceprint of such a document (in one transaction: all or none); returns how many.
  // With `model_digest`, a voiceprint of another embedding model refuses the whole document
  // (check_model's message), so that a library in use is not filled with voiceprints that would
  // refuse it later.
  std::size_t import_json(std::string_view document, std::string_view model_digest = {});

 private:
  std::filesystem::path file_;
  std::unique_ptr<sqlite3, int (*)(sqlite3*)> db_;
  // A transaction belongs to the connection, not to a thread: one call at a time on it.
  mutable std::mutex mutex_;
  void execute(const char* sql) const;
  std::int64_t insert(const std::string& name, const Voiceprint& voiceprint,
                      const std::string& source, const std::string& created);
};

}  // namespace parley::identity
