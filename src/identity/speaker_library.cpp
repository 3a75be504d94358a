#include "identity/speaker_library.h"

#include <sqlite3.h>

#include <chrono>
#include <cmath>
#include <cstring>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/text.h"

namespace parley::identity {
namespace {

constexpr const char* kFormatName = "parley-speaker-library";
constexpr int kFormatVersion = 1;

class Statement {
 public:
  Statement(sqlite3* db, const char* sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &statement_, nullptr) != SQLITE_OK) {
      fail("speaker library: cannot prepare '{}': {}", sql, sqlite3_errmsg(db));
    }
  }
  ~Statement() { sqlite3_finalize(statement_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  void bind(int index, const std::string& text) {
    sqlite3_bind_text(statement_, index, text.c_str(), static_cast<int>(text.size()),
                      SQLITE_TRANSIENT);
  }
  void bind_blob(int index, const void* data, std::size_t bytes) {
    sqlite3_bind_blob(statement_, index, data, static_cast<int>(bytes), SQLITE_TRANSIENT);
  }
  // true while there is a row.
  bool step() {
    const int status = sqlite3_step(statement_);
    if (status == SQLITE_ROW) return true;
    if (status != SQLITE_DONE) fail("speaker library: {}", sqlite3_errmsg(db_));
    return false;
  }
  std::string text(int column) const {
    const auto* bytes = sqlite3_column_text(statement_, column);
    if (bytes == nullptr) return {};
    return {reinterpret_cast<const char*>(bytes),
            static_cast<std::size_t>(sqlite3_column_bytes(statement_, column))};
  }
  std::vector<float> floats(int column) const {
    const void* bytes = sqlite3_column_blob(statement_, column);
    const auto size = static_cast<std::size_t>(sqlite3_column_bytes(statement_, column));
    std::vector<float> values(size / sizeof(float));
    if (bytes != nullptr && !values.empty()) std::memcpy(values.data(), bytes, values.size() * 4);
    return values;
  }
  std::int64_t integer(int column) const { return sqlite3_column_int64(statement_, column); }

 private:
  sqlite3* db_;
  sqlite3_stmt* statement_ = nullptr;
};

std::string utc_now() {
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}",
                     std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now()));
}

void check_voiceprint(const Voiceprint& voiceprint) {
  if (voiceprint.embedding.empty()) fail("a voiceprint needs an embedding");
  for (const float value : voiceprint.embedding) {
    if (!std::isfinite(value)) fail("a voiceprint's embedding must hold finite numbers only");
  }
  if (voiceprint.model_digest.size() != 64) {
    fail("a voiceprint must record its model's sha256 digest (64 hex digits)");
  }
}

}  // namespace

void check_speaker_name(std::string_view name) {
  if (name.empty() || name.size() > 128) {
    fail("a speaker name must have 1 to 128 bytes (got {})", name.size());
  }
  if (!is_valid_utf8(name)) fail("a speaker name must be UTF-8");
  // The labels parley gives unnamed speakers: a name like them would be taken for another speaker.
  for (const std::string_view prefix : {"SPEAKER_", "GLOBAL_"}) {
    if (name.starts_with(prefix) && name.size() > prefix.size() &&
        name.find_first_not_of("0123456789", prefix.size()) == std::string_view::npos) {
      fail("speaker name '{}' looks like a label parley gives unnamed speakers; pick a real name",
           name);
    }
  }
  for (const char c : name) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte <= 0x20 || byte == 0x7f) {
      fail(
          "speaker name '{}' holds white space or a control character, which RTTM cannot carry; "
          "write it as one word (Alice_Smith)",
          utf8_or_escaped(name));
    }
  }
}

nlohmann::ordered_json listing_json(const LibraryEntry& entry) {
  return {{"id", entry.id},
          {"name", entry.name},
          {"source", entry.source},
          {"created", entry.created},
          {"model_sha256", entry.voiceprint.model_digest},
          {"embedding_mode", entry.voiceprint.embedding_mode},
          {"dimension", entry.voiceprint.embedding.size()}};
}

SpeakerLibrary::SpeakerLibrary(const std::filesystem::path& file)
    : file_(file), db_(nullptr, sqlite3_close) {
  sqlite3* db = nullptr;
  const int status =
      sqlite3_open_v2(file.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr);
  db_.reset(db);
  if (status != SQLITE_OK) {
    fail("speaker library {}: cannot open: {}", file.string(),
         db != nullptr ? sqlite3_errmsg(db) : "out of memory");
  }
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  try {
    execute("PRAGMA journal_mode=WAL");
    execute(
        "CREATE TABLE IF NOT EXISTS voiceprints (id INTEGER PRIMARY KEY AUTOINCREMENT, "
        "name TEXT NOT NULL, embedding BLOB NOT NULL, model_sha256 TEXT NOT NULL, "
        "embedding_mode TEXT NOT NULL, source TEXT NOT NULL, created TEXT NOT NULL)");
    execute("CREATE INDEX IF NOT EXISTS voiceprints_name ON voiceprints(name)");
  } catch (const Error& error) {
    fail("speaker library {}: {} (is it a parley speaker library?)", file.string(), error.what());
  }
}

SpeakerLibrary::~SpeakerLibrary() = default;

void SpeakerLibrary::execute(const char* sql) const {
  char* message = nullptr;
  if (sqlite3_exec(db_.get(), sql, nullptr, nullptr, &message) != SQLITE_OK) {
    const std::string text = message != nullptr ? message : "unknown error";
    sqlite3_free(message);
    fail("{}", text);
  }
}

std::int64_t SpeakerLibrary::add(const std::string& name, const Voiceprint& voiceprint,
                                 const std::string& source, const std::string& created) {
  const std::lock_guard lock(mutex_);
  return insert(name, voiceprint, source, created);
}

std::int64_t SpeakerLibrary::insert(const std::string& name, const Voiceprint& voiceprint,
                                    const std::string& source, const std::string& created) {
  check_speaker_name(name);
  check_voiceprint(voiceprint);
  Statement insert(
      db_.get(),
      "INSERT INTO voiceprints (name, embedding, model_sha256, embedding_mode, source, "
      "created) VALUES (?, ?, ?, ?, ?, ?) RETURNING id");
  insert.bind(1, name);
  insert.bind_blob(2, voiceprint.embedding.data(), voiceprint.embedding.size() * sizeof(float));
  insert.bind(3, voiceprint.model_digest);
  insert.bind(4, voiceprint.embedding_mode);
  insert.bind(5, source);
  insert.bind(6, created.empty() ? utc_now() : created);
  if (!insert.step()) fail("speaker library: the voiceprint was not added");
  const std::int64_t id = insert.integer(0);
  while (insert.step()) {
  }
  return id;
}

std::vector<LibraryEntry> SpeakerLibrary::list() const {
  const std::lock_guard lock(mutex_);
  Statement select(db_.get(),
                   "SELECT id, name, embedding, model_sha256, embedding_mode, source, created "
                   "FROM voiceprints ORDER BY name, id");
  std::vector<LibraryEntry> entries;
  while (select.step()) {
    entries.push_back({select.integer(0),
                       select.text(1),
                       {select.floats(2), select.text(3), select.text(4)},
                       select.text(5),
                       select.text(6)});
  }
  return entries;
}

std::size_t SpeakerLibrary::rename(const std::string& from, const std::string& to, bool merge) {
  check_speaker_name(to);
  const std::lock_guard lock(mutex_);
  execute("BEGIN IMMEDIATE");
  try {
    if (!merge && from != to) {
      Statement taken(db_.get(), "SELECT count(*) FROM voiceprints WHERE name = ?");
      taken.bind(1, to);
      taken.step();
      if (taken.integer(0) > 0) {
        fail("the library already has a speaker named {}: pick another name, or merge the two", to);
      }
    }
    Statement update(db_.get(), "UPDATE voiceprints SET name = ? WHERE name = ?");
    update.bind(1, to);
    update.bind(2, from);
    update.step();
    const auto changed = static_cast<std::size_t>(sqlite3_changes(db_.get()));
    execute("COMMIT");
    return changed;
  } catch (...) {
    execute("ROLLBACK");
    throw;
  }
}

std::size_t SpeakerLibrary::remove(const std::string& name) {
  const std::lock_guard lock(mutex_);
  Statement erase(db_.get(), "DELETE FROM voiceprints WHERE name = ?");
  erase.bind(1, name);
  erase.step();
  return static_cast<std::size_t>(sqlite3_changes(db_.get()));
}

std::string SpeakerLibrary::export_json() const {
  nlohmann::ordered_json voiceprints = nlohmann::ordered_json::array();
  for (const LibraryEntry& entry : list()) {
    nlohmann::ordered_json embedding = nlohmann::ordered_json::array();
    // The shortest text that reads back as the same float (as frames/output.cpp writes them).
    for (const float value : entry.voiceprint.embedding) {
      embedding.push_back(std::strtod(fmt::format("{}", value).c_str(), nullptr));
    }
    voiceprints.push_back({{"name", entry.name},
                           {"source", entry.source},
                           {"created", entry.created},
                           {"model_sha256", entry.voiceprint.model_digest},
                           {"embedding_mode", entry.voiceprint.embedding_mode},
                           {"embedding", std::move(embedding)}});
  }
  const nlohmann::ordered_json document = {
      {"format", kFormatName}, {"version", kFormatVersion}, {"voiceprints", voiceprints}};
  return document.dump(2) + "\n";
}

std::size_t SpeakerLibrary::import_json(std::string_view document, std::string_view model_digest) {
  nlohmann::json parsed;
  try {
    parsed = nlohmann::json::parse(document);
  } catch (const nlohmann::json::exception& error) {
    fail("not a speaker library export: {}", error.what());
  }
  if (!parsed.is_object() || parsed.value("format", "") != kFormatName ||
      !parsed.contains("voiceprints") || !parsed["voiceprints"].is_array()) {
    fail("not a speaker library export (written by `parley voiceprint export`)");
  }
  if (parsed.value("version", 0) != kFormatVersion) {
    fail("speaker library export version {} is not {} (the one this parley reads)",
         parsed.value("version", 0), kFormatVersion);
  }
  // Everything is checked before anything is written: an import adds all or nothing.
  struct Pending {
    std::string name, source, created;
    Voiceprint voiceprint;
  };
  std::vector<Pending> pending;
  std::size_t index = 0;
  for (const auto& item : parsed["voiceprints"]) {
    try {
      if (!item.is_object()) fail("not an object");
      Pending entry;
      entry.name = item.at("name").get<std::string>();
      entry.source = item.value("source", "");
      entry.created = item.value("created", "");
      entry.voiceprint.model_digest = item.at("model_sha256").get<std::string>();
      entry.voiceprint.embedding_mode = item.value("embedding_mode", "");
      if (!item.at("embedding").is_array()) fail("the embedding is not a list of numbers");
      for (const auto& value : item.at("embedding")) {
        if (!value.is_number()) fail("an embedding value is not a number");
        entry.voiceprint.embedding.push_back(value.get<float>());
      }
      check_speaker_name(entry.name);
      check_voiceprint(entry.voiceprint);
      if (!model_digest.empty()) {
        check_model(entry.voiceprint, model_digest, fmt::format("voiceprint of {}", entry.name));
      }
      pending.push_back(std::move(entry));
    } catch (const nlohmann::json::exception& error) {
      fail("voiceprint {} of the export: {}", index + 1, error.what());
    } catch (const Error& error) {
      fail("voiceprint {} of the export: {}", index + 1, error.what());
    }
    ++index;
  }
  const std::lock_guard lock(mutex_);
  execute("BEGIN IMMEDIATE");
  try {
    for (const Pending& entry : pending) {
      insert(entry.name, entry.voiceprint, entry.source, entry.created);
    }
    execute("COMMIT");
  } catch (...) {
    execute("ROLLBACK");
    throw;
  }
  return pending.size();
}

}  // namespace parley::identity
