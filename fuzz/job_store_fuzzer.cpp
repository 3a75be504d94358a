// `parley serve`'s job store reading back what is in its database: the server trusts no row it did
// not check (a state it does not know, JSON that is not an object, options of the wrong type,
// text that is not UTF-8, ids that are not ids), because the file may have been edited, damaged
// or written by another version. The input is either one row, as lines (id, state, uri, audio,
// transcript, options, stage_seconds, error, attempts, cancel_requested, crashes, suspect), put
// into a store the server made, both while it is open and before it is opened again; or, after
// a first line "database", the bytes of jobs.sqlite3 itself. Opening the store may refuse it with
// parley::Error; once open, a row of the first kind must never make a read throw (it would be a 500
// for every request): it is served or quarantined.
#include <sqlite3.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "core/temporary_directory.h"
#include "fuzz_input.h"
#include "server/job_store.h"

namespace {

namespace fs = std::filesystem;
using parley::server::JobStore;

std::vector<std::string> lines(std::string_view text, std::size_t count) {
  std::vector<std::string> fields;
  while (fields.size() + 1 < count) {
    const auto end = text.find('\n');
    if (end == std::string_view::npos) break;
    fields.emplace_back(text.substr(0, end));
    text.remove_prefix(end + 1);
  }
  fields.emplace_back(text);
  fields.resize(count);
  return fields;
}

void insert_row(const fs::path& database, const std::vector<std::string>& field) {
  sqlite3* db = nullptr;
  if (sqlite3_open(database.c_str(), &db) != SQLITE_OK) std::abort();
  sqlite3_stmt* statement = nullptr;
  const char* sql =
      "INSERT INTO jobs (id, state, uri, audio, transcript, options, stage_seconds, error, "
      "attempts, cancel_requested, crashes, suspect, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, "
      "?, ?, ?, 1)";
  if (sqlite3_prepare_v2(db, sql, -1, &statement, nullptr) != SQLITE_OK) std::abort();
  for (int k = 0; k < 8; ++k) {
    sqlite3_bind_text(statement, k + 1, field[k].data(), static_cast<int>(field[k].size()),
                      SQLITE_TRANSIENT);
  }
  for (int k = 8; k < 12; ++k) {
    sqlite3_bind_int64(statement, k + 1, std::strtoll(field[k].c_str(), nullptr, 10));
  }
  sqlite3_step(statement);  // a duplicate id or a NULL is refused by the schema: fine
  sqlite3_finalize(statement);
  sqlite3_close(db);
}

// Everything the API and the queue read.
void read_everything(JobStore& store) {
  for (const auto& job : store.list(0, 100)) (void)store.find(job.id);
  (void)store.count();
  (void)store.count_by_state();
  (void)store.requeue_running();
  while (const auto job = store.oldest_queued(2, {})) {
    if (!store.start(job->id)) break;
    store.mark_failed(job->id, "fuzzed");
  }
  (void)store.list(0, 100);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input = parley::fuzz::as_text(data, size);
  const parley::TemporaryDirectory folder("parley-fuzz-job-store-");
  const fs::path state = folder / "state";
  const std::string raw_marker = "database\n";
  if (input.rfind(raw_marker, 0) == 0) {
    fs::create_directories(state);
    std::ofstream(state / "jobs.sqlite3", std::ios::binary) << input.substr(raw_marker.size());
    parley::fuzz::expect_parse_or_error([&] {
      JobStore store(state);
      read_everything(store);
    });
    return 0;
  }
  const auto row = lines(input, 12);
  {
    // Met by a running server (written behind its back), then at the next start.
    JobStore running(state);
    insert_row(state / "jobs.sqlite3", row);
    read_everything(running);
  }
  insert_row(state / "jobs.sqlite3", row);
  std::optional<JobStore> store;
  parley::fuzz::expect_parse_or_error([&] { store.emplace(state); });
  if (store) read_everything(*store);
  return 0;
}
