#include "server/job_store.h"

#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <random>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/error.h"

namespace parley::server {
namespace fs = std::filesystem;
namespace {

constexpr const char* kStateNames[] = {"queued", "running", "done", "failed", "cancelled"};

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// One prepared statement, finalized when it goes out of scope.
class Statement {
 public:
  Statement(sqlite3* db, const std::string& sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &statement_, nullptr) != SQLITE_OK) {
      fail("job store: cannot prepare '{}': {}", sql, sqlite3_errmsg(db));
    }
  }
  ~Statement() { sqlite3_finalize(statement_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int index, const std::string& text) {
    sqlite3_bind_text(statement_, index, text.c_str(), static_cast<int>(text.size()),
                      SQLITE_TRANSIENT);
    return *this;
  }
  Statement& bind(int index, double value) {
    sqlite3_bind_double(statement_, index, value);
    return *this;
  }
  Statement& bind(int index, std::int64_t value) {
    sqlite3_bind_int64(statement_, index, value);
    return *this;
  }
  // True while there is a row to read.
  bool step() {
    const int status = sqlite3_step(statement_);
    if (status == SQLITE_ROW) return true;
    if (status != SQLITE_DONE) fail("job store: {}", sqlite3_errmsg(db_));
    return false;
  }
  std::string text(int column) const {
    const auto* bytes = sqlite3_column_text(statement_, column);
    return bytes == nullptr
               ? std::string()
               : std::string(reinterpret_cast<const char*>(bytes),
                             static_cast<std::size_t>(sqlite3_column_bytes(statement_, column)));
  }
  double real(int column) const { return sqlite3_column_double(statement_, column); }
  std::int64_t integer(int column) const { return sqlite3_column_int64(statement_, column); }

 private:
  sqlite3* db_;
  sqlite3_stmt* statement_ = nullptr;
};

constexpr const char* kColumns =
    "id, state, uri, audio, transcript, options, attempts, cancel_requested, created, started, "
    "finished, audio_seconds, stage_seconds, error, crashes, suspect, seq";

// A JSON object kept in a column; anything else is a damaged row.
nlohmann::json json_object(const std::string& column, const std::string& text) {
  nlohmann::json value = nlohmann::json::parse(text, nullptr, false);
  if (value.is_discarded() || !value.is_object()) {
    fail("column {} is not a JSON object", column);
  }
  return value;
}

bool is_id(const std::string& id) {
  return id.size() == 32 && id.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// A row as the server wrote it, or parley::Error saying what is not: everything the API and the
// queue later take for granted is checked here, once.
Job read_job(const Statement& row) {
  Job job;
  job.id = row.text(0);
  if (!is_id(job.id)) fail("the id is not 32 hex digits");
  job.state = parse_job_state(row.text(1));
  job.uri = row.text(2);
  job.audio = row.text(3);
  if (job.audio.empty()) fail("no audio");
  job.transcript = row.text(4);
  job.options = json_object("options", row.text(5));
  for (const char* count : {"num_speakers", "min_speakers", "max_speakers"}) {
    if (job.options.contains(count) &&
        !(job.options[count].is_number_integer() && job.options[count].get<std::int64_t>() >= 1 &&
          job.options[count].get<std::int64_t>() <= 1000000)) {
      fail("option {} is not a whole number of at least 1", count);
    }
  }
  for (const char* flag : {"exclusive", "server_file"}) {
    if (job.options.contains(flag) && !job.options[flag].is_boolean()) {
      fail("option {} is not true or false", flag);
    }
  }
  if (job.options.contains("filename") && !job.options["filename"].is_string()) {
    fail("option filename is not text");
  }
  job.attempts = static_cast<int>(std::clamp<std::int64_t>(row.integer(6), 0, 1000000));
  job.cancel_requested = row.integer(7) != 0;
  job.created = row.real(8);
  job.started = row.real(9);
  job.finished = row.real(10);
  job.audio_seconds = row.real(11);
  job.stage_seconds = json_object("stage_seconds", row.text(12));
  job.error = row.text(13);
  job.crashes = static_cast<int>(std::clamp<std::int64_t>(row.integer(14), 0, 1000000));
  job.suspect = row.integer(15) != 0;
  // JSON answers cannot hold what is not UTF-8: the server writes only valid text.
  for (const std::string* text : {&job.uri, &job.error}) {
    if (nlohmann::json(*text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) !=
        nlohmann::json(*text).dump(-1, ' ', false, nlohmann::json::error_handler_t::ignore)) {
      fail("text that is not UTF-8");
    }
  }
  return job;
}

}  // namespace

std::string to_string(JobState state) { return kStateNames[static_cast<int>(state)]; }

JobState parse_job_state(const std::string& name) {
  for (int state = 0; state < 5; ++state) {
    if (name == kStateNames[state]) return static_cast<JobState>(state);
  }
  fail("job store: unknown job state '{}' (the database was written by another program?)", name);
}

void JobStore::CloseDatabase::operator()(sqlite3* db) const { sqlite3_close(db); }

JobStore::JobStore(const fs::path& state_dir) : jobs_dir_(state_dir / "jobs") {
  std::error_code error;
  fs::create_directories(jobs_dir_, error);
  if (error) fail("state folder {}: cannot create it: {}", state_dir.string(), error.message());
  const fs::path database = state_dir / "jobs.sqlite3";
  // SQLite takes an empty file for a new database: a truncated store would start empty and
  // leave every job's folder behind.
  if (fs::exists(database, error) && fs::file_size(database, error) == 0 && !error) {
    std::size_t folders = 0;
    for (const auto& entry : fs::directory_iterator(jobs_dir_, error)) {
      if (entry.is_directory() && is_id(entry.path().filename().string())) ++folders;
    }
    if (folders > 0) {
      fail(
          "job store {}: the database is empty (0 bytes) but {} holds {} job folders; restore "
          "jobs.sqlite3 from a backup, or move the state folder away to start afresh",
          database.string(), jobs_dir_.string(), folders);
    }
  }
  sqlite3* db = nullptr;
  const int status =
      sqlite3_open_v2(database.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr);
  db_.reset(db);  // closed even when opening failed
  if (status != SQLITE_OK) {
    fail("job store {}: cannot open it: {}", database.string(), sqlite3_errstr(status));
  }
  sqlite3_busy_timeout(db_.get(), 5000);
  try {
    check_database(database);
  } catch (const Error& failure) {
    std::string reason = failure.what();
    if (reason.rfind("job store: ", 0) == 0) reason.erase(0, 11);
    fail(
        "job store {}: {}; restore it from a backup, or move the state folder away to start "
        "afresh (the server does not start on a store it cannot trust)",
        database.string(), reason);
  }
}

void JobStore::check_database(const fs::path& database) {
  // A damaged file fails here ("file is not a database", "malformed") instead of on every
  // request later.
  {
    Statement check(db_.get(), "PRAGMA quick_check");
    while (check.step()) {
      const std::string verdict = check.text(0);
      if (verdict != "ok") fail("the database is damaged ({})", verdict);
    }
  }
  execute("PRAGMA journal_mode=WAL");
  execute("PRAGMA synchronous=FULL");
  // seq keeps the order jobs were accepted in, for listing and for the queue.
  execute(
      "CREATE TABLE IF NOT EXISTS jobs (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE "
      "NOT NULL, state TEXT NOT NULL, uri TEXT NOT NULL, audio TEXT NOT NULL, transcript TEXT NOT "
      "NULL, options TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, cancel_requested "
      "INTEGER NOT NULL DEFAULT 0, created REAL NOT NULL, started REAL NOT NULL DEFAULT 0, "
      "finished REAL NOT NULL DEFAULT 0, audio_seconds REAL NOT NULL DEFAULT 0, stage_seconds "
      "TEXT NOT NULL DEFAULT '{}', error TEXT NOT NULL DEFAULT '', crashes INTEGER NOT NULL "
      "DEFAULT 0, suspect INTEGER NOT NULL DEFAULT 0)");
  execute("CREATE INDEX IF NOT EXISTS jobs_by_state ON jobs (state, seq)");
  execute(
      "CREATE TABLE IF NOT EXISTS quarantined_jobs (seq INTEGER, id TEXT, row TEXT NOT NULL, "
      "reason TEXT NOT NULL, quarantined REAL NOT NULL)");
  // The schema: every column the server reads, the two newest added to an older store.
  std::vector<std::string> columns;
  {
    Statement info(db_.get(), "PRAGMA table_info(jobs)");
    while (info.step()) columns.push_back(info.text(1));
  }
  const auto has = [&](const char* name) {
    return std::find(columns.begin(), columns.end(), name) != columns.end();
  };
  for (const char* added : {"crashes", "suspect"}) {
    if (!has(added)) {
      execute(fmt::format("ALTER TABLE jobs ADD COLUMN {} INTEGER NOT NULL DEFAULT 0", added));
      columns.emplace_back(added);
    }
  }
  for (const char* needed : {"seq", "id", "state", "uri", "audio", "transcript", "options",
                             "attempts", "cancel_requested", "created", "started", "finished",
                             "audio_seconds", "stage_seconds", "error"}) {
    if (!has(needed)) fail("its table jobs has no column {} (not a parley job store?)", needed);
  }
  // Every row, read once: one that cannot be read is set aside, not served as a 500 forever.
  const std::lock_guard lock(mutex_);
  const std::size_t before = quarantined_unlocked();
  // Page by page; a quarantined row leaves the table, so the next page starts after the
  // readable rows seen so far.
  for (std::size_t offset = 0;;) {
    const std::size_t page_before = quarantined_unlocked();
    const std::size_t readable = query("ORDER BY seq", {}, offset, 1000).size();
    if (readable == 0 && quarantined_unlocked() == page_before) break;
    offset += readable;
  }
  const std::size_t moved = quarantined_unlocked() - before;
  if (moved > 0) {
    spdlog::warn(
        "job store {}: {} jobs could not be read and were moved to its table "
        "quarantined_jobs; the others are served",
        database.string(), moved);
  }
}

void JobStore::quarantine(std::int64_t seq, const std::string& reason) const {
  Statement(db_.get(),
            "INSERT INTO quarantined_jobs (seq, id, row, reason, quarantined) SELECT seq, "
            "CAST(id AS TEXT), quote(id) || ', ' || quote(state) || ', ' || quote(uri) || ', ' || "
            "quote(audio) || ', ' || quote(transcript) || ', ' || quote(options) || ', ' || "
            "quote(attempts) || ', ' || quote(created) || ', ' || quote(stage_seconds) || ', ' || "
            "quote(error), ?, ? FROM jobs WHERE seq = ?")
      .bind(1, reason)
      .bind(2, unix_now())
      .bind(3, seq)
      .step();
  Statement(db_.get(), "DELETE FROM jobs WHERE seq = ?").bind(1, seq).step();
  spdlog::warn("job store: the job in row {} cannot be read ({}); moved to quarantined_jobs", seq,
               reason);
}

std::size_t JobStore::quarantined_unlocked() const {
  Statement count(db_.get(), "SELECT COUNT(*) FROM quarantined_jobs");
  count.step();
  return static_cast<std::size_t>(count.integer(0));
}

std::size_t JobStore::quarantined() const {
  const std::lock_guard lock(mutex_);
  return quarantined_unlocked();
}

void JobStore::execute(const std::string& sql) const {
  char* message = nullptr;
  if (sqlite3_exec(db_.get(), sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
    const std::string text = message != nullptr ? message : "unknown error";
    sqlite3_free(message);
    fail("job store: '{}' failed: {}", sql, text);
  }
}

std::string JobStore::new_job_folder() {
  static thread_local std::mt19937_64 generator(std::random_device{}());
  while (true) {
    const std::string id = fmt::format("{:016x}{:016x}", generator(), generator());
    std::error_code error;
    if (fs::create_directory(jobs_dir_ / id, error)) return id;
    if (error)
      fail("state folder {}: cannot create a job folder: {}", jobs_dir_.string(), error.message());
  }
}

fs::path JobStore::job_folder(const std::string& id) const { return jobs_dir_ / id; }

void JobStore::add(const Job& job) {
  const std::lock_guard lock(mutex_);
  Statement(db_.get(),
            "INSERT INTO jobs (id, state, uri, audio, transcript, options, created, audio_seconds) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
      .bind(1, job.id)
      .bind(2, to_string(job.state))
      .bind(3, job.uri)
      .bind(4, job.audio.string())
      .bind(5, job.transcript.string())
      .bind(6, job.options.dump())
      .bind(7, job.created > 0.0 ? job.created : unix_now())
      .bind(8, job.audio_seconds)
      .step();
}

std::vector<Job> JobStore::query(const std::string& where_and_order,
                                 const std::vector<std::string>& text, std::size_t offset,
                                 std::size_t limit) const {
  Statement statement(
      db_.get(), fmt::format("SELECT {} FROM jobs {} LIMIT ? OFFSET ?", kColumns, where_and_order));
  int index = 1;
  for (const auto& value : text) statement.bind(index++, value);
  statement.bind(index++, static_cast<std::int64_t>(std::min<std::size_t>(limit, INT64_MAX)));
  statement.bind(index, static_cast<std::int64_t>(offset));
  std::vector<Job> jobs;
  std::vector<std::pair<std::int64_t, std::string>> damaged;
  while (statement.step()) {
    try {
      jobs.push_back(read_job(statement));
    } catch (const std::exception& error) {
      damaged.emplace_back(statement.integer(16), error.what());
    }
  }
  // After the statement is done with the rows; a page short by the damaged rows is still a page
  // of readable jobs, and the next read does not meet them again.
  for (const auto& [seq, reason] : damaged) quarantine(seq, reason);
  return jobs;
}

std::optional<Job> JobStore::find(const std::string& id) const {
  const std::lock_guard lock(mutex_);
  auto jobs = query("WHERE id = ?", {id}, 0, 1);
  if (jobs.empty()) return std::nullopt;
  return std::move(jobs.front());
}

std::vector<Job> JobStore::list(std::size_t offset, std::size_t limit) const {
  const std::lock_guard lock(mutex_);
  return query("ORDER BY seq", {}, offset, limit);
}

std::size_t JobStore::count() const {
  const std::lock_guard lock(mutex_);
  Statement statement(db_.get(), "SELECT COUNT(*) FROM jobs");
  statement.step();
  return static_cast<std::size_t>(statement.integer(0));
}

std::map<JobState, std::size_t> JobStore::count_by_state() const {
  const std::lock_guard lock(mutex_);
  std::map<JobState, std::size_t> counts;
  for (int state = 0; state < 5; ++state) counts[static_cast<JobState>(state)] = 0;
  Statement statement(db_.get(), "SELECT state, COUNT(*) FROM jobs GROUP BY state");
  while (statement.step()) {
    for (int state = 0; state < 5; ++state) {
      if (statement.text(0) == kStateNames[state]) {
        counts[static_cast<JobState>(state)] = static_cast<std::size_t>(statement.integer(1));
      }
    }
  }
  return counts;
}

std::optional<Job> JobStore::oldest_queued(int max_crashes, const std::vector<std::string>& skip) {
  const std::lock_guard lock(mutex_);
  std::string where = "WHERE state = 'queued'";
  if (!skip.empty()) {
    where += " AND id NOT IN (?";
    for (std::size_t k = 1; k < skip.size(); ++k) where += ", ?";
    where += ")";
  }
  where += " ORDER BY seq";
  while (true) {
    const std::size_t quarantined_before = quarantined_unlocked();
    auto jobs = query(where, skip, 0, 1);
    if (jobs.empty()) {
      // The oldest was unreadable and is set aside now: the next one may be fine.
      if (quarantined_unlocked() != quarantined_before) continue;
      return std::nullopt;
    }
    Job job = std::move(jobs.front());
    if (job.crashes < max_crashes) return job;
    Statement(db_.get(), "UPDATE jobs SET state = 'failed', finished = ?, error = ? WHERE id = ?")
        .bind(1, unix_now())
        .bind(2, fmt::format("the server died {} times while diarizing this recording alone (a "
                             "native crash?); it is not tried again",
                             job.crashes))
        .bind(3, job.id)
        .step();
  }
}

bool JobStore::start(const std::string& id) {
  const std::lock_guard lock(mutex_);
  Statement(db_.get(),
            "UPDATE jobs SET state = 'running', attempts = attempts + 1, started = ? WHERE id = ? "
            "AND state = 'queued'")
      .bind(1, unix_now())
      .bind(2, id)
      .step();
  return sqlite3_changes(db_.get()) > 0;
}

std::size_t JobStore::requeue_running() {
  const std::lock_guard lock(mutex_);
  execute("BEGIN IMMEDIATE");
  try {
    Statement(db_.get(),
              "UPDATE jobs SET state = 'cancelled', finished = ? WHERE state = 'running' AND "
              "cancel_requested != 0")
        .bind(1, unix_now())
        .step();
    std::size_t running = 0;
    {
      Statement count(db_.get(), "SELECT COUNT(*) FROM jobs WHERE state = 'running'");
      count.step();
      running = static_cast<std::size_t>(count.integer(0));
    }
    // Alone in the networks, it is the likely cause; with others, any of them may be, and each
    // runs alone next to tell.
    execute(running == 1 ? "UPDATE jobs SET state = 'queued', crashes = crashes + 1, suspect = 0 "
                           "WHERE state = 'running'"
                         : "UPDATE jobs SET state = 'queued', suspect = 1 WHERE state = 'running'");
    execute("COMMIT");
    return running;
  } catch (...) {
    sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

void JobStore::requeue(const std::string& id) {
  const std::lock_guard lock(mutex_);
  Statement(db_.get(),
            "UPDATE jobs SET state = 'queued', attempts = MAX(attempts - 1, 0) WHERE id = ? AND "
            "state = 'running'")
      .bind(1, id)
      .step();
}

void JobStore::mark_done(const std::string& id, double audio_seconds,
                         const nlohmann::json& stage_seconds) {
  const std::lock_guard lock(mutex_);
  Statement(db_.get(),
            "UPDATE jobs SET state = 'done', finished = ?, audio_seconds = ?, stage_seconds = ? "
            "WHERE id = ?")
      .bind(1, unix_now())
      .bind(2, audio_seconds)
      .bind(3, stage_seconds.dump())
      .bind(4, id)
      .step();
}

void JobStore::mark_failed(const std::string& id, const std::string& error) {
  const std::lock_guard lock(mutex_);
  Statement(db_.get(), "UPDATE jobs SET state = 'failed', finished = ?, error = ? WHERE id = ?")
      .bind(1, unix_now())
      .bind(2, error)
      .bind(3, id)
      .step();
}

bool JobStore::cancel(const std::string& id) {
  const std::lock_guard lock(mutex_);
  Statement(db_.get(),
            "UPDATE jobs SET state = 'cancelled', finished = ? WHERE id = ? AND state = 'queued'")
      .bind(1, unix_now())
      .bind(2, id)
      .step();
  if (sqlite3_changes(db_.get()) > 0) return true;
  Statement(db_.get(), "UPDATE jobs SET cancel_requested = 1 WHERE id = ? AND state = 'running'")
      .bind(1, id)
      .step();
  return false;
}

void JobStore::mark_cancelled(const std::string& id) {
  const std::lock_guard lock(mutex_);
  Statement(db_.get(), "UPDATE jobs SET state = 'cancelled', finished = ? WHERE id = ?")
      .bind(1, unix_now())
      .bind(2, id)
      .step();
}

void JobStore::remove(const std::string& id) {
  {
    const std::lock_guard lock(mutex_);
    Statement(db_.get(), "DELETE FROM jobs WHERE id = ?").bind(1, id).step();
  }
  // After the row: a crash in between leaves an orphan folder, never a row without its files.
  std::error_code error;
  fs::remove_all(job_folder(id), error);
}

std::size_t JobStore::remove_finished_before(double finished_before) {
  std::vector<std::string> ids;
  {
    const std::lock_guard lock(mutex_);
    Statement select(db_.get(),
                     "SELECT id FROM jobs WHERE state IN ('done', 'failed', 'cancelled') AND "
                     "finished > 0 AND finished < ?");
    select.bind(1, finished_before);
    while (select.step()) ids.push_back(select.text(0));
  }
  for (const auto& id : ids) remove(id);
  return ids.size();
}

}  // namespace parley::server
