#pragma once
// The server's durable record of every job: one SQLite database (WAL mode, synchronous=FULL, so
// a committed state change survives kill -9 and power loss) plus one folder per job holding its
// audio, transcript and results, each file written atomically before the row that points at it.
// The row is the truth: a job is done only once its results are on disk and its row says so.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

struct sqlite3;

namespace parley::server {

enum class JobState { kQueued, kRunning, kDone, kFailed, kCancelled };
std::string to_string(JobState state);
JobState parse_job_state(const std::string& name);

struct Job {
  std::string id;  // 32 lowercase hex digits, made by the server (never a client's name)
  JobState state = JobState::kQueued;
  std::string uri;                   // names the recording in its results (RTTM's file id)
  std::filesystem::path audio;       // the upload in the job's folder, or an allowed server file
  std::filesystem::path transcript;  // empty: none to fuse
  // Per-job options: num_speakers, min_speakers, max_speakers, exclusive.
  nlohmann::json options = nlohmann::json::object();
  int attempts = 0;  // runs started (JobStore::start), so a crash mid-run is counted
  // Deaths of the server blamed on this job: it was the only one in the networks.
  int crashes = 0;
  // In the networks with others when the server died: it runs alone next, to tell.
  bool suspect = false;
  bool cancel_requested = false;
  double created = 0.0;  // Unix seconds
  double started = 0.0;
  double finished = 0.0;
  double audio_seconds = 0.0;  // the header's duration when accepted, the decoded one when done
  nlohmann::json stage_seconds = nlohmann::json::object();
  std::string error;
};

class JobStore {
 public:
  // Opens (creating) <state_dir>/jobs.sqlite3 and <state_dir>/jobs/, and checks what it opened:
  // a database that is damaged, is not a job store, or is empty while job folders exist is
  // refused (parley::Error saying what to do), and a row that cannot be read is moved to the
  // table quarantined_jobs (logged) while the others are served.
  explicit JobStore(const std::filesystem::path& state_dir);
  JobStore(const JobStore&) = delete;
  JobStore& operator=(const JobStore&) = delete;

  // A fresh id and its (created, empty) folder, for the files of a job about to be added.
  std::string new_job_folder();
  std::filesystem::path job_folder(const std::string& id) const;

  void add(const Job& job);
  std::optional<Job> find(const std::string& id) const;
  // Jobs in the order they were accepted, `limit` from `offset`.
  std::vector<Job> list(std::size_t offset, std::size_t limit) const;
  std::size_t count() const;
  std::map<JobState, std::size_t> count_by_state() const;

  // The oldest queued job not in `skip` (ids), left queued; a queued job that has already been
  // blamed for `max_crashes` deaths of the process is marked failed instead and skipped.
  std::optional<Job> oldest_queued(int max_crashes, const std::vector<std::string>& skip);
  // A queued job now running with one more attempt, counted before its run starts so that a
  // crash during it counts. False when it is no longer queued (cancelled or removed meanwhile).
  bool start(const std::string& id);
  // At startup, what a killed server was running: a job whose cancellation was asked is
  // cancelled; the others are queued again. When one job was in the networks the death is
  // blamed on it (crashes + 1); when several were, none is blamed and each is a suspect, to run
  // alone. Returns how many were queued again.
  std::size_t requeue_running();
  // Rows moved to quarantined_jobs so far.
  std::size_t quarantined() const;
  // A running job back to queued without counting the attempt (a clean shutdown stopped it
  // before it ran).
  void requeue(const std::string& id);

  void mark_done(const std::string& id, double audio_seconds, const nlohmann::json& stage_seconds);
  void mark_failed(const std::string& id, const std::string& error);
  // Queued: cancelled now (true). Running: flagged, and cancelled when its run ends (false).
  bool cancel(const std::string& id);
  void mark_cancelled(const std::string& id);
  // The row and the folder.
  void remove(const std::string& id);
  // Every job done, failed or cancelled before `finished_before` (Unix seconds), as remove();
  // how many.
  std::size_t remove_finished_before(double finished_before);

 private:
  void execute(const std::string& sql) const;
  void check_database(const std::filesystem::path& database);
  // Moves the row to quarantined_jobs, with why (the store's mutex held).
  void quarantine(std::int64_t seq, const std::string& reason) const;
  std::size_t quarantined_unlocked() const;
  std::vector<Job> query(const std::string& where_and_order, const std::vector<std::string>& text,
                         std::size_t offset, std::size_t limit) const;

  std::filesystem::path jobs_dir_;
  struct CloseDatabase {
    void operator()(sqlite3* db) const;
  };
  std::unique_ptr<sqlite3, CloseDatabase> db_;
  mutable std::mutex mutex_;
};

}  // namespace parley::server
