#pragma once
// The worker between the job store and the corpus engine: one engine run that lasts as long as
// the server, fed by a source that takes the oldest queued job from the store and waits when
// there is none. A taken job stays queued in the store until the engine's networks start on it;
// only then is it running and its attempt counted (before the run, so a crash in it counts).
// Results are written as the engine reports them, in completion order. Stopping lets the recordings
// already in the networks finish and puts every other taken job back in the queue for the next
// start.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "corpus/corpus_engine.h"
#include "identity/identification.h"
#include "pipeline/diarizer.h"
#include "server/allowed_file.h"
#include "server/job_store.h"
#include "server/metrics.h"

namespace parley::server {

// Deaths of the process blamed on one job (it was alone in the networks) before it is marked
// failed: the first may be bad luck (a native teardown crash), the second is the recording.
constexpr int kMaxJobCrashes = 2;

// What the HTTP API needs of whatever runs the jobs: the JobQueue below in the server, a stand-in
// without models in the HTTP fuzzer (fuzz/http_fuzzer.cpp).
// A job's progress `elapsed_seconds` into the networks (0.15 to 0.85 of the whole, as they take
// most of the time), from its audio's length and what the networks lately took per second of
// audio; it stops short of the clustering's share until the networks are done.
double networks_progress(double elapsed_seconds, double audio_seconds,
                         double seconds_per_audio_second);

// A job's configuration: the option values the server's engine runs with (ServerConfig::
// engine_values) with the job's own values of the table's per_job options over them, applied as
// every face applies option values (pipeline::apply_options). Fails "{option}: {problem}", also
// when the job's values would change what the engine's networks share with every job
// (pipeline::OutputSettings::check_recording_settings).
pipeline::DiarizationConfig job_configuration(const nlohmann::json& engine_values,
                                              const nlohmann::json& options);

class JobRunner {
 public:
  virtual ~JobRunner() = default;
  // A job was queued (or cancelled).
  virtual void wake() = 0;
  // How far a running job is (0..1); nullopt when it is not running here.
  virtual std::optional<double> progress(const std::string& id) const = 0;
  // Waits until the job is no longer queued or running, or `timeout` passes; the job as it is
  // then (nullopt: removed).
  virtual std::optional<Job> wait_until_finished(const std::string& id,
                                                 std::chrono::steady_clock::duration timeout) = 0;
};

// What the queue does besides running jobs.
struct JobPolicy {
  // The folder server files must still be in when their jobs run (empty: none).
  std::filesystem::path allow_paths;
  // Finished jobs are removed (row and folder) this long after they finished; 0: kept.
  double retain_seconds = 0.0;
  // An upload is removed once its job is done (the results stay); false keeps it.
  bool remove_uploads = false;
  // Names a finished job's speakers before its documents are written (`parley serve
  // --voiceprints`, identity/): renames the result's turns and returns what the JSON document
  // gains; unset: no names.
  std::function<identity::Identification(pipeline::DiarizationResult&)> identify;
  // The sha256 of the embedding model, written beside every result (kEmbeddingModelFile) so that
  // a voiceprint taken from it later records the model that computed it, whatever the server
  // runs by then; empty: not written.
  std::string embedding_model_digest;
  // The option values the engine runs with (ServerConfig::engine_values): each job's output
  // settings are job_configuration(engine_values, its options), which the engine applies to it.
  nlohmann::json engine_values = nlohmann::json::object();
};

// In a finished job's folder: the digest of the embedding model that computed its result.
inline constexpr const char* kEmbeddingModelFile = "embedding_model.sha256";

class JobQueue : public JobRunner {
 public:
  JobQueue(JobStore& store, corpus::CorpusEngine& engine, Metrics& metrics, JobPolicy policy = {});
  ~JobQueue() override;  // stop()
  JobQueue(const JobQueue&) = delete;
  JobQueue& operator=(const JobQueue&) = delete;

  void start();
  // No new job starts; those in the networks finish; the others go back to queued. Idempotent.
  void stop();
  // Wakes the source.
  void wake() override;
  // By the engine's stage the job is in.
  std::optional<double> progress(const std::string& id) const override;
  std::optional<Job> wait_until_finished(const std::string& id,
                                         std::chrono::steady_clock::duration timeout) override;

 private:
  struct Taken {
    std::string id;
    std::string stage;  // the engine's stage it is in ("" before decoding starts)
    std::chrono::steady_clock::time_point stage_start;
    // A server file, open from the check until the result: the engine reads this descriptor.
    std::shared_ptr<OpenedFile> file;
    double audio_seconds = 0.0;  // as accepted: how long the networks should take
  };

  void run();
  void sweep();  // the retention policy, now and then until stop()
  std::optional<corpus::CorpusRecording> next_recording();
  void on_stage(std::size_t index, std::string_view stage);
  void on_result(corpus::RecordingOutcome outcome);
  void finish(const Job& job, const corpus::RecordingOutcome& outcome,
              const std::shared_ptr<OpenedFile>& file);

  // The job's recording as the engine should open it, or nullopt when the job was failed for it.
  std::optional<std::filesystem::path> readable_audio(const Job& job,
                                                      std::shared_ptr<OpenedFile>& file);

  JobStore& store_;
  corpus::CorpusEngine& engine_;
  Metrics& metrics_;
  JobPolicy policy_;
  bool alone_ = false;  // a suspect job is in the engine: nothing else is taken
  // Seconds the networks took per second of audio, lately (a first guess until one is measured).
  double networks_seconds_per_audio_second_ = 0.02;
  std::atomic<bool> stop_{false};
  mutable std::mutex mutex_;
  std::condition_variable wake_;        // the source waits for queued jobs
  std::condition_variable finished_;    // wait_until_finished waits for results
  std::map<std::size_t, Taken> taken_;  // by the engine's recording index
  std::size_t next_index_ = 0;
  std::thread thread_;
  std::thread sweeper_;
};

}  // namespace parley::server
