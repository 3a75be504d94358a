#include "server/job_queue.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/atomic_file.h"
#include "core/error.h"
#include "pipeline/option_table.h"
#include "pipeline/option_values.h"
#include "server/messages.h"
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

}  // namespace

double networks_progress(double elapsed_seconds, double audio_seconds,
                         double seconds_per_audio_second) {
  const double expected = audio_seconds * seconds_per_audio_second;
  if (!(expected > 0.0) || !(elapsed_seconds > 0.0)) return stage_progress("networks");
  // Never at the next stage's value before the networks are done with it.
  const double share = std::min(elapsed_seconds / expected, 0.95);
  return stage_progress("networks") +
         share * (stage_progress("clustering") - stage_progress("networks"));
}

namespace {

// The engine's messages name the server's copy of the upload (or the descriptor it read a server
// file through); the client knows its own name.
std::string client_message(const std::string& message, const Job& job,
                           const std::shared_ptr<OpenedFile>& file) {
  const std::string client_name = job.options.value("filename", job.uri);
  std::string text = replace_all(message, job.audio.string(), client_name);
  if (file) text = replace_all(text, file->path().string(), client_name);
  return text;
}

}  // namespace

pipeline::DiarizationConfig job_configuration(const nlohmann::json& engine_values,
                                              const nlohmann::json& options) {
  nlohmann::json values = engine_values;
  for (const pipeline::OptionSpec& spec : pipeline::diarization_options()) {
    if (!spec.per_job) continue;
    if (const auto found = options.find(spec.name); found != options.end()) {
      values[spec.name] = *found;
    }
  }
  pipeline::DiarizationConfig engine;
  pipeline::apply_options(engine_values, engine);
  pipeline::DiarizationConfig config;
  pipeline::apply_options(values, config);
  engine.check_recording_settings(config.output());
  return config;
}

JobQueue::JobQueue(JobStore& store, corpus::CorpusEngine& engine, Metrics& metrics,
                   JobPolicy policy)
    : store_(store), engine_(engine), metrics_(metrics), policy_(std::move(policy)) {}

JobQueue::~JobQueue() { stop(); }

void JobQueue::start() {
  if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  if (policy_.retain_seconds > 0.0 && !sweeper_.joinable()) {
    sweeper_ = std::thread([this] { sweep(); });
  }
}

void JobQueue::sweep() {
  // Often enough that a job outlives its term by at most half of it (and 10 minutes).
  const auto interval =
      std::chrono::duration<double>(std::min(policy_.retain_seconds / 2.0, 600.0));
  std::unique_lock lock(mutex_);
  while (!stop_) {
    lock.unlock();
    try {
      const double now =
          std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
              .count();
      if (const std::size_t removed = store_.remove_finished_before(now - policy_.retain_seconds)) {
        spdlog::info("removed {} jobs finished more than {:.0f} s ago (the retention policy)",
                     removed, policy_.retain_seconds);
      }
    } catch (const std::exception& error) {
      spdlog::error("cannot remove old jobs: {}", error.what());
    }
    lock.lock();
    wake_.wait_for(lock, interval, [this] { return stop_.load(); });
  }
}

void JobQueue::stop() {
  {
    const std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (sweeper_.joinable()) sweeper_.join();
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
    alone_ = false;
  }
}

std::optional<std::filesystem::path> JobQueue::readable_audio(const Job& job,
                                                              std::shared_ptr<OpenedFile>& file) {
  if (!job.options.value("server_file", false)) return job.audio;
  // A server file: checked again now, on the descriptor the engine will read (the folder may
  // have changed since the job was accepted).
  if (policy_.allow_paths.empty()) {
    store_.mark_failed(job.id,
                       "the server no longer takes server files (it was started again without "
                       "allow_paths); upload the recording");
    return std::nullopt;
  }
  AllowedFile opened = open_allowed_file(policy_.allow_paths, job.audio);
  if (opened.check != AllowedFileCheck::kInside) {
    store_.mark_failed(job.id, opened.check == AllowedFileCheck::kOutside
                                   ? "path: the file now leads outside the allowed folder (a "
                                     "link changed after the job was accepted)"
                                   : "path: the file is no longer in the allowed folder");
    return std::nullopt;
  }
  file = std::make_shared<OpenedFile>(std::move(*opened.file));
  return file->path();
}

std::optional<corpus::CorpusRecording> JobQueue::next_recording() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    std::optional<Job> job;
    std::shared_ptr<OpenedFile> file;
    std::optional<std::filesystem::path> audio;
    pipeline::OutputSettings output;
    // A suspect job (in the networks with others when the server died) runs alone: it waits
    // for the engine to empty, and nothing is taken while it runs.
    if (!alone_) {
      try {
        std::vector<std::string> held;
        for (const auto& [index, taken] : taken_) held.push_back(taken.id);
        job = store_.oldest_queued(kMaxJobCrashes, held);
        if (job && job->suspect && !taken_.empty()) job.reset();
        if (job) {
          audio = readable_audio(*job, file);
          if (!audio) continue;
          try {
            output = job_configuration(policy_.engine_values, job->options).output();
          } catch (const Error& error) {
            // Checked when the job was accepted; a state folder edited since fails it alone.
            store_.mark_failed(job->id, error.what());
            continue;
          }
        }
      } catch (const std::exception& error) {
        spdlog::error("cannot take the next job: {}", error.what());
        job.reset();
      }
    }
    if (job) {
      corpus::CorpusRecording recording;
      recording.audio = *audio;
      recording.uri = job->uri;
      recording.output = std::move(output);
      if (job->suspect) alone_ = true;
      taken_[next_index_++] =
          Taken{job->id, "", std::chrono::steady_clock::now(), file, job->audio_seconds};
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
    const double seconds = std::chrono::duration<double>(now - taken.stage_start).count();
    metrics_.observe_stage(taken.stage, seconds);
    // What the networks took per second of audio, for the progress of the next recordings.
    if (taken.stage == "networks" && taken.audio_seconds > 1.0) {
      networks_seconds_per_audio_second_ =
          0.7 * networks_seconds_per_audio_second_ + 0.3 * (seconds / taken.audio_seconds);
    }
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
      finish(*job, outcome, taken.file);
    }
  } catch (const std::exception& error) {
    spdlog::error("job {}: {}", taken.id, error.what());
    try {
      // The message may name the server's folders: the client is told what happened.
      store_.mark_failed(taken.id, is_out_of_space(error.what())
                                       ? "the server ran out of disk space for the result; "
                                         "submit the recording again later"
                                       : "the server could not store the result (its log says "
                                         "why)");
    } catch (const std::exception& store_error) {
      // Left running in the store: the next start queues it again.
      spdlog::error("job {}: cannot record its failure: {}", taken.id, store_error.what());
    }
  }
  {
    const std::lock_guard lock(mutex_);
    taken_.erase(outcome.index);
    if (taken_.empty()) alone_ = false;
  }
  finished_.notify_all();
  wake_.notify_all();
}

void JobQueue::finish(const Job& job, const corpus::RecordingOutcome& outcome,
                      const std::shared_ptr<OpenedFile>& file) {
  if (job.cancel_requested) {
    store_.mark_cancelled(job.id);
    return;
  }
  if (!outcome.ok()) {
    store_.mark_failed(job.id, client_message(outcome.error, job, file));
    return;
  }
  pipeline::DiarizationResult result = *outcome.result;
  std::optional<identity::Identification> identification;
  if (policy_.identify) identification = policy_.identify(result);
  const auto documents = result_documents(
      result, job.options.value("exclusive", false), job.transcript,
      identification ? &*identification : nullptr, pipeline::transcript_options(job.options));
  // Every document is on disk before the row says done: a crash in between re-runs the job,
  // which writes the same bytes again.
  for (const auto& [format, text] : documents) {
    write_file_atomically(store_.job_folder(job.id) / ("result." + format), text);
  }
  if (!policy_.embedding_model_digest.empty()) {
    write_file_atomically(store_.job_folder(job.id) / kEmbeddingModelFile,
                          policy_.embedding_model_digest + "\n");
  }
  nlohmann::json stage_seconds = {{"decode", outcome.decode_seconds}};
  for (const auto& [stage, seconds] : result.stage_times.entries()) stage_seconds[stage] = seconds;
  stage_seconds["wall"] = outcome.wall_seconds;
  store_.mark_done(job.id, result.duration_seconds, stage_seconds);
  metrics_.add_processed_audio(result.duration_seconds);
  // Only now: until the row says done, a crash runs the job again from its upload.
  if (policy_.remove_uploads && !job.options.value("server_file", false)) {
    std::error_code error;
    std::filesystem::remove(job.audio, error);
  }
}

std::optional<double> JobQueue::progress(const std::string& id) const {
  const std::lock_guard lock(mutex_);
  for (const auto& [index, taken] : taken_) {
    if (taken.id != id) continue;
    if (taken.stage != "networks") return stage_progress(taken.stage);
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - taken.stage_start).count();
    return networks_progress(elapsed, taken.audio_seconds, networks_seconds_per_audio_second_);
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
