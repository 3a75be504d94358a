#include "server/job_queue.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/atomic_file.h"
#include "server/result_documents.h"

namespace parley::server {
namespace {

// Progress when a recording enters each stage: decoding is quick, the networks take most of
// the time, clustering the rest.
double stage_progress(const std::string& stage) {
  if (stage == "decoding") return 0.05;
  if (stage == "networks") return 0.15;
  if (stage == "clustering") return 0.85;
  return 0.0;
}

// The engine's messages name the server's copy of the upload; the client knows its own name.
std::string client_message(std::string message, const Job& job) {
  const std::string server_path = job.audio.string();
  const std::string client_name = job.options.value("filename", job.uri);
  for (auto at = message.find(server_path); at != std::string::npos;
       at = message.find(server_path, at + client_name.size())) {
    message.replace(at, server_path.size(), client_name);
  }
  return message;
}

}  // namespace

JobQueue::JobQueue(JobStore& store, corpus::CorpusEngine& engine, Metrics& metrics)
    : store_(store), engine_(engine), metrics_(metrics) {}

JobQueue::~JobQueue() { stop(); }

void JobQueue::start() {
  if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
}

void JobQueue::stop() {
  {
    const std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void JobQueue::wake() {
  { const std::lock_guard lock(mutex_); }
  wake_.notify_all();
}

void JobQueue::run() {
  while (!stop_) {
    try {
      engine_.run([this] { return next_recording(); },
                  [this](corpus::RecordingOutcome outcome) { on_result(std::move(outcome)); },
                  [this](std::size_t index, std::string_view stage) { on_stage(index, stage); },
                  &stop_);
    } catch (const std::exception& error) {
      spdlog::error("the engine stopped: {}; starting it again", error.what());
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
    // Taken but never reported: stopped before the networks (still queued), or the run failed
    // (running, but the run did not crash the process, so its attempt is given back).
    const std::lock_guard lock(mutex_);
    for (const auto& [index, taken] : taken_) store_.requeue(taken.id);
    taken_.clear();
  }
}

std::optional<corpus::CorpusRecording> JobQueue::next_recording() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    std::optional<Job> job;
    try {
      std::vector<std::string> held;
      for (const auto& [index, taken] : taken_) held.push_back(taken.id);
      job = store_.oldest_queued(kMaxJobAttempts, held);
    } catch (const std::exception& error) {
      spdlog::error("cannot take the next job: {}", error.what());
    }
    if (job) {
      corpus::CorpusRecording recording;
      recording.audio = job->audio;
      recording.uri = job->uri;
      cluster::SpeakerCountConstraints speakers;
      const auto& options = job->options;
      if (options.contains("num_speakers")) speakers.num_speakers = options["num_speakers"];
      if (options.contains("min_speakers")) speakers.min_speakers = options["min_speakers"];
      if (options.contains("max_speakers")) speakers.max_speakers = options["max_speakers"];
      if (speakers.num_speakers || speakers.min_speakers || speakers.max_speakers) {
        recording.speakers = speakers;
      }
      taken_[next_index_++] = Taken{job->id, "", std::chrono::steady_clock::now()};
      return recording;
    }
    wake_.wait_for(lock, std::chrono::seconds(5));
  }
  return std::nullopt;
}

void JobQueue::on_stage(std::size_t index, std::string_view stage) {
  const std::lock_guard lock(mutex_);
  const auto found = taken_.find(index);
  if (found == taken_.end()) return;
  Taken& taken = found->second;
  const auto now = std::chrono::steady_clock::now();
  if (!taken.stage.empty()) {
    metrics_.observe_stage(taken.stage,
                           std::chrono::duration<double>(now - taken.stage_start).count());
  }
  taken.stage = std::string(stage);
  taken.stage_start = now;
  // Running, and its attempt counted, only now: a job that waited for an engine (decoded, or
  // behind another recording) when the process died has not been tried.
  if (stage == "networks") {
    try {
      store_.start(taken.id);
    } catch (const std::exception& error) {
      spdlog::error("job {}: cannot mark it running: {}", taken.id, error.what());
    }
  }
}

void JobQueue::on_result(corpus::RecordingOutcome outcome) {
  Taken taken;
  {
    const std::lock_guard lock(mutex_);
    const auto found = taken_.find(outcome.index);
    if (found == taken_.end()) return;
    taken = found->second;
  }
  if (!taken.stage.empty()) {
    metrics_.observe_stage(taken.stage, std::chrono::duration<double>(
                                            std::chrono::steady_clock::now() - taken.stage_start)
                                            .count());
  }
  try {
    // Cancelled or removed while it waited for an engine: its result is not wanted. A job that
    // never reached the networks (undecodable) is still queued and ends here.
    const auto job = store_.find(taken.id);
    if (job && (job->state == JobState::kQueued || job->state == JobState::kRunning)) {
      finish(*job, outcome);
    }
  } catch (const std::exception& error) {
    spdlog::error("job {}: {}", taken.id, error.what());
    try {
      store_.mark_failed(taken.id, error.what());
    } catch (const std::exception& store_error) {
      // Left running in the store: the next start queues it again.
      spdlog::error("job {}: cannot record its failure: {}", taken.id, store_error.what());
    }
  }
  {
    const std::lock_guard lock(mutex_);
    taken_.erase(outcome.index);
  }
  finished_.notify_all();
}

void JobQueue::finish(const Job& job, const corpus::RecordingOutcome& outcome) {
  if (job.cancel_requested) {
    store_.mark_cancelled(job.id);
    return;
  }
  if (!outcome.ok()) {
    store_.mark_failed(job.id, client_message(outcome.error, job));
    return;
  }
  const pipeline::DiarizationResult& result = *outcome.result;
  const auto documents =
      result_documents(result, job.options.value("exclusive", false), job.transcript);
  // Every document is on disk before the row says done: a crash in between re-runs the job,
  // which writes the same bytes again.
  for (const auto& [format, text] : documents) {
    write_file_atomically(store_.job_folder(job.id) / ("result." + format), text);
  }
  nlohmann::json stage_seconds = {{"decode", outcome.decode_seconds}};
  for (const auto& [stage, seconds] : result.stage_times.entries()) stage_seconds[stage] = seconds;
  stage_seconds["wall"] = outcome.wall_seconds;
  store_.mark_done(job.id, result.duration_seconds, stage_seconds);
  metrics_.add_processed_audio(result.duration_seconds);
}

std::optional<double> JobQueue::progress(const std::string& id) const {
  const std::lock_guard lock(mutex_);
  for (const auto& [index, taken] : taken_) {
    if (taken.id == id) return stage_progress(taken.stage);
  }
  return std::nullopt;
}

std::optional<Job> JobQueue::wait_until_finished(const std::string& id,
                                                 std::chrono::steady_clock::duration timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    auto job = store_.find(id);
    if (!job || (job->state != JobState::kQueued && job->state != JobState::kRunning) ||
        std::chrono::steady_clock::now() >= deadline) {
      return job;
    }
    std::unique_lock lock(mutex_);
    // Bounded: a job can also end outside on_result (failed for its attempts, cancelled).
    finished_.wait_for(lock, std::chrono::milliseconds(200));
  }
}

}  // namespace parley::server
