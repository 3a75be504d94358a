#include "server/job_store.h"

#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <random>

#include <fmt/format.h>

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
    "finished, audio_seconds, stage_seconds, error";

Job read_job(const Statement& row) {
  Job job;
  job.id = row.text(0);
  job.state = parse_job_state(row.text(1));
  job.uri = row.text(2);
  job.audio = row.text(3);
  job.transcript = row.text(4);
  job.options = nlohmann::json::parse(row.text(5));
  job.attempts = static_cast<int>(row.integer(6));
  job.cancel_requested = row.integer(7) != 0;
  job.created = row.real(8);
  job.started = row.real(9);
  job.finished = row.real(10);
  job.audio_seconds = row.real(11);
  job.stage_seconds = nlohmann::json::parse(row.text(12));
  job.error = row.text(13);
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
  sqlite3* db = nullptr;
  const int status =
      sqlite3_open_v2(database.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr);
  db_.reset(db);  // closed even when opening failed
  if (status != SQLITE_OK) {
    fail("job store {}: cannot open it: {}", database.string(), sqlite3_errstr(status));
  }
  sqlite3_busy_timeout(db_.get(), 5000);
  execute("PRAGMA journal_mode=WAL");
  execute("PRAGMA synchronous=FULL");
  // seq keeps the order jobs were accepted in, for listing and for the queue.
  execute(
      "CREATE TABLE IF NOT EXISTS jobs (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE "
      "NOT NULL, state TEXT NOT NULL, uri TEXT NOT NULL, audio TEXT NOT NULL, transcript TEXT NOT "
      "NULL, options TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, cancel_requested "
      "INTEGER NOT NULL DEFAULT 0, created REAL NOT NULL, started REAL NOT NULL DEFAULT 0, "
      "finished REAL NOT NULL DEFAULT 0, audio_seconds REAL NOT NULL DEFAULT 0, stage_seconds "
      "TEXT NOT NULL DEFAULT '{}', error TEXT NOT NULL DEFAULT '')");
  execute("CREATE INDEX IF NOT EXISTS jobs_by_state ON jobs (state, seq)");
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
            "INSERT INTO jobs (id, state, uri, audio, transcript, options, created) VALUES (?, ?, "
            "?, ?, ?, ?, ?)")
      .bind(1, job.id)
      .bind(2, to_string(job.state))
      .bind(3, job.uri)
      .bind(4, job.audio.string())
      .bind(5, job.transcript.string())
      .bind(6, job.options.dump())
      .bind(7, job.created > 0.0 ? job.created : unix_now())
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
  while (statement.step()) jobs.push_back(read_job(statement));
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
    counts[parse_job_state(statement.text(0))] = static_cast<std::size_t>(statement.integer(1));
  }
  return counts;
}

std::optional<Job> JobStore::oldest_queued(int max_attempts, const std::vector<std::string>& skip) {
  const std::lock_guard lock(mutex_);
  std::string where = "WHERE state = 'queued'";
  if (!skip.empty()) {
    where += " AND id NOT IN (?";
    for (std::size_t k = 1; k < skip.size(); ++k) where += ", ?";
    where += ")";
  }
  where += " ORDER BY seq";
  while (true) {
    auto jobs = query(where, skip, 0, 1);
    if (jobs.empty()) return std::nullopt;
    Job job = std::move(jobs.front());
    if (job.attempts < max_attempts) return job;
    Statement(db_.get(), "UPDATE jobs SET state = 'failed', finished = ?, error = ? WHERE id = ?")
        .bind(1, unix_now())
        .bind(2, fmt::format("the server died {} times while diarizing this recording (a native "
                             "crash?); it is not tried again",
                             job.attempts))
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
  execute("UPDATE jobs SET state = 'queued' WHERE state = 'running'");
  return static_cast<std::size_t>(sqlite3_changes(db_.get()));
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

}  // namespace parley::server
