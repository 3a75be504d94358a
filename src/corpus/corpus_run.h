#pragma once
// The run of many recordings through a corpus engine, for every face that runs one (`parley
// diarize` over a list, the C API's parley_batch_* and through it Python's parley.Batch and
// parley.distributed): the engine laid out once (corpus/engine_layout.h), a recording whose
// outputs an earlier run finished skipped, the rest queued on the engine, each result written
// through its out-dir writer with its record (corpus/out_dir_writer.h), a recording that fails
// (undecodable, a model error, an output that cannot be written) failing alone, and progress and
// skips reported as they happen. A face only translates: it names the recordings and where they
// go, and says what it does with each outcome.
//
// Recordings may be added while the run goes (a library batch takes them one at a time) or all
// before it (a list); the run ends once finish() was called and every added recording is reported.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "corpus/corpus_engine.h"
#include "corpus/engine_layout.h"
#include "corpus/linked_run.h"
#include "corpus/out_dir_writer.h"
#include "pipeline/diarizer.h"

namespace parley::corpus {

// A run that links its recordings' speakers across the corpus (corpus/linked_run.h,
// identity/speaker_linking.h): `parley diarize --link-speakers`.
struct CorpusLinking {
  LinkRequest request;  // threshold, where the speakers table goes, library names
  // The format of the texts made for recordings added without a target (LinkedOutcome::texts).
  std::string text_format = "rttm";
  OutputOptions table_options;  // for the speakers table's file
};

struct CorpusRunConfig {
  pipeline::DiarizationModels models;
  pipeline::DiarizationConfig diarization;
  EngineLayoutRequest layout;
  // A recording whose outputs an earlier run finished with the same settings is reported
  // skipped, not diarized. False for a run that needs every recording's result again (one that
  // links speakers across the recordings).
  bool skip_finished = true;
  // When the run is stopped (CorpusRun::stop), recordings in the networks are abandoned instead
  // of finished: for a caller that stops because nobody waits for the results any more.
  bool abandon_on_stop = false;
  // Set: every recording's result is held until the engine has run them all, then their speakers
  // are linked, each result written with its global labels (into its target; without one, as a
  // text: linked()), and the speakers table written. Nothing is skipped (linking needs every
  // recording's speakers): skip_finished is taken as false.
  std::optional<CorpusLinking> link;

  // Fails, naming the field, on an empty model path or a layout request out of bounds (the
  // engine layout checks the rest against the devices).
  void validate() const;
  std::string to_string() const;
};

// Where one recording's result is written: its folder's writer (format, turns, settings) and
// the recording's outputs there (OutDirWriter::plan).
struct OutDirTarget {
  std::shared_ptr<const OutDirWriter> writer;
  PlannedOutputs outputs;
};

// How far a run is.
struct CorpusRunSummary {
  std::size_t added = 0;    // recordings added, skipped and failed ones included
  std::size_t done = 0;     // diarized (and written, for those with a target)
  std::size_t skipped = 0;  // finished by an earlier run
  std::size_t failed = 0;
  double audio_seconds = 0.0;  // of the recordings done
  double run_seconds = 0.0;    // since run() started the engine (0 before)

  // Added and not yet reported.
  std::size_t pending() const { return added - done - skipped - failed; }
};

// What a face does with each recording's outcome. Each is called without the run's lock held,
// one call at a time for results and failures (from the engine's threads), and may be empty.
struct CorpusRunCallbacks {
  // A recording whose outputs an earlier run finished, with the seconds of audio its record says.
  // Called from add(), before it returns.
  std::function<void(std::size_t index, double audio_seconds)> on_skipped;
  // A recording diarized, its outputs already written when it had a target. Not called in a
  // linked run, whose results are its linked() outcome.
  std::function<void(RecordingOutcome outcome)> on_result;
  // A recording that failed, and why (added failed, or failed in the engine or writing).
  std::function<void(std::size_t index, const std::filesystem::path& audio, const std::string& why)>
      on_failure;
  // After each result or failure from the engine.
  std::function<void(const CorpusRunSummary& summary)> on_progress;
  // A result's text in one format, for a face that names speakers; the target's writer formats
  // when empty.
  OutDirWriter::Formatter format;
};

class CorpusRun {
 public:
  // Plans the engine layout (validate() first) with the networks placed as every face places
  // them (fingerprinted_placement: config().diarization is that); loads no model (load() and
  // run() do).
  CorpusRun(CorpusRunConfig config, CorpusRunCallbacks callbacks);
  ~CorpusRun();
  CorpusRun(const CorpusRun&) = delete;
  CorpusRun& operator=(const CorpusRun&) = delete;

  const CorpusRunConfig& config() const { return config_; }
  const EngineLayout& layout() const { return layout_; }

  // Adds a recording and returns its index (0, 1, ... in the order added). A recording the
  // engine will work on is checked first, its file opened unless recording.duration_seconds is
  // set: one that cannot be opened is reported failed at once (add_failed); one this run cannot
  // hold (check_recording_fits: too long for the step, or it must spill and the temporary folder
  // is unusable) is refused, adding nothing, with a message that names it. With a target its
  // outputs are claimed: fails, adding nothing, when an earlier recording of this run writes one
  // of them (OutputClaims). A target finished by an earlier run is reported skipped at once (when
  // config().skip_finished); otherwise the recording waits for the engine. Fails once finish()
  // was called.
  std::size_t add(CorpusRecording recording, std::optional<OutDirTarget> target = {});
  // A recording that failed before it could be queued (its audio could not be opened): counted
  // and reported as failed.
  std::size_t add_failed(const std::filesystem::path& audio, const std::string& why);
  // A recording reported done whose result the face could not use after all (a linked run that
  // could not write it): counted failed instead; the face says why.
  void mark_failed(std::size_t index);

  // No more recordings: run() returns once those added are reported.
  void finish();
  // No new recording starts; run() returns once those started are reported (or abandoned).
  void stop();

  // Loads the engine's models (once): a face that wants a model error before any recording.
  void load();
  // Loads the engine when needed and diarizes every recording added, until finish() and all are
  // reported, or stop(). Rethrows what stopped the engine (an exception from a callback too). A
  // linked run then links and writes its results (unless stopped): a result that cannot be
  // written is reported failed (on_failure) and counted so; fails when the speakers table cannot
  // be written.
  void run();

  // A linked run's outcome once run() returned (the linking, the texts of recordings without a
  // target, the speakers table's text); null before, after a stop, and for a run that does not
  // link.
  const LinkedOutcome* linked() const { return linked_ ? &*linked_ : nullptr; }

  CorpusRunSummary summary() const;

 private:
  std::optional<CorpusRecording> next_recording();
  void report(RecordingOutcome outcome);
  void finish_linking();

  CorpusRunConfig config_;
  CorpusRunCallbacks callbacks_;
  EngineLayout layout_;
  std::unique_ptr<CorpusEngine> engine_;
  std::atomic<bool> stop_{false};

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  bool finished_ = false;
  std::vector<std::filesystem::path> audio_;  // by index
  std::vector<std::string> uris_;             // by index: names in a speakers table
  std::unique_ptr<LinkedRun> linking_;        // a linked run's held results
  std::optional<LinkedOutcome> linked_;
  std::vector<std::size_t> engine_order_;        // the index of each recording queued
  std::deque<CorpusRecording> queued_;           // waiting for the engine, in that order
  std::map<std::size_t, OutDirTarget> targets_;  // of the recordings queued, by index
  OutputClaims claims_;
  CorpusRunSummary summary_;
  std::optional<std::chrono::steady_clock::time_point> started_;
};

}  // namespace parley::corpus
