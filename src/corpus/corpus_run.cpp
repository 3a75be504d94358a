#include "corpus/corpus_run.h"

#include <fmt/format.h>

#include "audio/audio_source.h"
#include "core/error.h"
#include "core/sample_rate.h"
#include "core/stage_timer.h"
#include "core/text.h"
#include "corpus/run_plan.h"
#include "corpus/run_record.h"
#include "pipeline/option_table.h"

namespace parley::corpus {

void CorpusRunConfig::validate() const {
  if (models.segmentation.empty()) fail("models.segmentation is empty: name the model file");
  if (models.embedding.empty()) fail("models.embedding is empty: name the model file");
  if (layout.engines_per_device < 0) {
    fail("engines_per_device must be at least 0, 0 choosing automatically (got {})",
         layout.engines_per_device);
  }
  if (layout.jobs < 1 || layout.jobs > pipeline::kMaxCorpusJobs) {
    fail("jobs must be in [1, {}] (got {})", pipeline::kMaxCorpusJobs, layout.jobs);
  }
}

std::string CorpusRunConfig::to_string() const {
  return fmt::format(
      "CorpusRunConfig(models=(segmentation={}, embedding={}, plda={}), diarization={}, "
      "layout=(device_list=\"{}\", engines_per_device={}, jobs={}, "
      "segmentation_layout_automatic={}), skip_finished={}, abandon_on_stop={}, link={})",
      utf8_or_escaped(models.segmentation.string()), utf8_or_escaped(models.embedding.string()),
      utf8_or_escaped(models.plda.string()), diarization.to_string(), layout.device_list,
      layout.engines_per_device, layout.jobs, layout.segmentation_layout_automatic, skip_finished,
      abandon_on_stop,
      link ? fmt::format("(threshold={}, speakers_table={}, text_format={})",
                         link->request.threshold,
                         utf8_or_escaped(link->request.speakers_table.string()), link->text_format)
           : std::string("none"));
}

CorpusRun::CorpusRun(CorpusRunConfig config, CorpusRunCallbacks callbacks)
    : config_(std::move(config)), callbacks_(std::move(callbacks)) {
  config_.validate();
  // Every face places the networks alike, whatever the recordings' lengths: the providers are in
  // each output's fingerprint (fingerprinted_placement). Each recording's length is checked as it
  // is added.
  config_.diarization = fingerprinted_placement(std::move(config_.diarization), 0.0);
  layout_ = plan_engine_layout(config_.models, config_.diarization, config_.layout);
  layout_.corpus.abandon_on_stop = config_.abandon_on_stop;
  if (config_.link) {
    config_.skip_finished = false;
    linking_ = std::make_unique<LinkedRun>(config_.link->request, nullptr,
                                           std::vector<std::string>{config_.link->text_format});
  }
}

CorpusRun::~CorpusRun() = default;

std::size_t CorpusRun::add(CorpusRecording recording, std::optional<OutDirTarget> target) {
  if (!(target && config_.skip_finished && target->outputs.finished())) {
    // What the engine will work on is checked before it takes it, as a list's plan checks its
    // recordings (probe_recordings): one that cannot be opened fails alone, one that this run
    // cannot hold is refused.
    double seconds = 0.0;
    if (recording.samples) {
      seconds = static_cast<double>(recording.samples->size()) / kSampleRate;
    } else if (recording.duration_seconds) {
      seconds = *recording.duration_seconds;
    } else {
      try {
        seconds =
            audio::open_audio_source(recording.audio)->info().duration_seconds().value_or(0.0);
      } catch (const Error& error) {
        return add_failed(recording.audio, error.what());
      }
    }
    try {
      // Samples in memory never spill.
      check_recording_fits(config_.diarization, seconds,
                           recording.samples ? 0 : layout_.corpus.spill_samples);
    } catch (const Error& error) {
      fail("{}: {}", utf8_or_escaped(recording.samples ? recording.uri : recording.audio.string()),
           error.what());
    }
  }
  std::optional<double> skipped_seconds;
  std::size_t index = 0;
  {
    std::lock_guard lock(mutex_);
    if (finished_) fail("the run is finished: no recording can be added after finish()");
    index = summary_.added;
    if (target) {
      if (!target->writer) fail("an output target needs its folder's writer");
      claims_.claim(target->outputs, index, recording.audio);
    }
    ++summary_.added;
    audio_.push_back(recording.audio);
    uris_.push_back(recording.uri);
    if (target && config_.skip_finished && target->outputs.finished()) {
      ++summary_.skipped;
      skipped_seconds = target->outputs.formats.front().audio_seconds;
    } else {
      if (target) targets_.emplace(index, std::move(*target));
      engine_order_.push_back(index);
      queued_.push_back(std::move(recording));
    }
  }
  changed_.notify_all();
  if (skipped_seconds && callbacks_.on_skipped) callbacks_.on_skipped(index, *skipped_seconds);
  return index;
}

std::size_t CorpusRun::add_failed(const std::filesystem::path& audio, const std::string& why) {
  std::size_t index = 0;
  {
    std::lock_guard lock(mutex_);
    if (finished_) fail("the run is finished: no recording can be added after finish()");
    index = summary_.added++;
    audio_.push_back(audio);
    uris_.emplace_back();
    ++summary_.failed;
  }
  if (callbacks_.on_failure) callbacks_.on_failure(index, audio, why);
  return index;
}

void CorpusRun::mark_failed(std::size_t index) {
  std::lock_guard lock(mutex_);
  if (index >= summary_.added || summary_.done == 0) {
    fail("mark_failed: recording {} was not reported done", index);
  }
  --summary_.done;
  ++summary_.failed;
}

void CorpusRun::finish() {
  {
    std::lock_guard lock(mutex_);
    finished_ = true;
  }
  changed_.notify_all();
}

void CorpusRun::stop() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
}

void CorpusRun::load() {
  if (!engine_) engine_ = make_corpus_engine(config_.models, layout_);
}

CorpusRunSummary CorpusRun::summary() const {
  std::lock_guard lock(mutex_);
  CorpusRunSummary summary = summary_;
  if (started_) summary.run_seconds = seconds_since(*started_);
  return summary;
}

std::optional<CorpusRecording> CorpusRun::next_recording() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] { return !queued_.empty() || finished_ || stop_; });
  if (stop_ || queued_.empty()) return std::nullopt;
  CorpusRecording recording = std::move(queued_.front());
  queued_.pop_front();
  return recording;
}

void CorpusRun::report(RecordingOutcome outcome) {
  std::optional<OutDirTarget> target;
  {
    std::lock_guard lock(mutex_);
    outcome.index = engine_order_.at(outcome.index);
    if (const auto found = targets_.find(outcome.index); found != targets_.end()) {
      target = std::move(found->second);
      targets_.erase(found);
    }
  }
  if (linking_ && outcome.ok()) {
    // Written once the run's speakers are linked (finish_linking).
    CorpusRunSummary summary;
    {
      std::lock_guard lock(mutex_);
      ++summary_.done;
      summary_.audio_seconds += outcome.result->duration_seconds;
      const std::size_t index = outcome.index;
      if (target) {
        linking_->hold(index, uris_.at(index), std::move(outcome), std::move(target->outputs),
                       std::move(target->writer));
      } else {
        linking_->hold(index, uris_.at(index), std::move(outcome));
      }
      summary = summary_;
      if (started_) summary.run_seconds = seconds_since(*started_);
    }
    if (callbacks_.on_progress) callbacks_.on_progress(summary);
    return;
  }
  if (target && outcome.ok()) {
    // A result that cannot be written (a full disk, a name the file system refuses) fails that
    // recording alone, like a model error.
    try {
      target->writer->write(target->outputs, *outcome.result, outcome.wall_seconds,
                            callbacks_.format);
    } catch (const std::exception& error) {
      outcome.error = error.what();
      outcome.result.reset();
    }
  }
  CorpusRunSummary summary;
  std::filesystem::path audio;
  {
    std::lock_guard lock(mutex_);
    if (outcome.ok()) {
      ++summary_.done;
      summary_.audio_seconds += outcome.result->duration_seconds;
    } else {
      ++summary_.failed;
    }
    summary = summary_;
    if (started_) summary.run_seconds = seconds_since(*started_);
    audio = audio_.at(outcome.index);
  }
  if (!outcome.ok()) {
    if (callbacks_.on_failure) callbacks_.on_failure(outcome.index, audio, outcome.error);
  } else if (callbacks_.on_result) {
    callbacks_.on_result(std::move(outcome));
  }
  if (callbacks_.on_progress) callbacks_.on_progress(summary);
}

void CorpusRun::run() {
  load();
  {
    std::lock_guard lock(mutex_);
    started_ = std::chrono::steady_clock::now();
  }
  const auto stopped = [this] {
    std::lock_guard lock(mutex_);
    summary_.run_seconds = seconds_since(*started_);
    started_.reset();
  };
  try {
    engine_->run([this] { return next_recording(); },
                 [this](RecordingOutcome outcome) { report(std::move(outcome)); }, {}, &stop_);
  } catch (...) {
    stopped();
    throw;
  }
  stopped();
  if (linking_ && !stop_) finish_linking();
}

void CorpusRun::finish_linking() {
  LinkedOutcome done = linking_->finish(config_.link->table_options);
  for (const auto& [index, why] : done.failures) {
    std::filesystem::path audio;
    {
      std::lock_guard lock(mutex_);
      --summary_.done;
      ++summary_.failed;
      audio = audio_.at(index);
    }
    if (callbacks_.on_failure) callbacks_.on_failure(index, audio, why);
  }
  std::lock_guard lock(mutex_);
  linked_ = std::move(done);
}

}  // namespace parley::corpus
