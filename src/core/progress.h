#pragma once
// Progress on long work, drawn on stderr as one rewritten line. Silent when stderr is not a
// terminal or when the user asked for quiet output, so logs and pipes stay clean.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <spdlog/sinks/sink.h>

namespace parley {

// Where long work reports how far it has got. The pipeline reports to this interface only, so
// that a library user can watch (or stop, by throwing from update) a run without a terminal;
// Progress below is the command line's drawer.
class ProgressSink {
 public:
  virtual ~ProgressSink() = default;
  // Starts a named stage with `total` units of work (0 when unknown).
  virtual void begin(const std::string& stage, std::size_t total) = 0;
  // Records `done` units finished so far in the current stage; may be called from several
  // threads. An exception thrown here stops the work and reaches the caller.
  virtual void update(std::size_t done) = 0;
  // Finishes the current stage.
  virtual void end() = 0;
};

// On a terminal the line is drawn again at least every `redraw_every` (with the elapsed time), so
// that it does not look frozen between updates; anything else written to the same stream goes
// through write_above_progress (log lines do, through progress_aware_sink), which clears the line
// first and draws it again after.
class Progress : public ProgressSink {
 public:
  enum class Mode { kAuto, kAlways, kNever };
  explicit Progress(Mode mode = Mode::kAuto, std::FILE* stream = stderr,
                    std::chrono::milliseconds redraw_every = std::chrono::seconds(1));
  ~Progress() override;
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  bool enabled() const { return enabled_; }

  void begin(const std::string& stage, std::size_t total) override;
  // Thread-safe; redraws at most ten times a second.
  void update(std::size_t done) override;
  // The same, with a few words drawn after the count (rates, totals so far).
  void update(std::size_t done, std::string detail);
  // Prints `line` on a line of its own above the progress line (which is drawn again), so that
  // messages during long work do not tear it; without a terminal, just the line.
  void note(const std::string& line);
  // Leaves the stage's final line on screen.
  void end() override;

 private:
  friend void write_above_progress(std::FILE* stream, const std::function<void()>& write);
  void draw(bool final_draw);
  void redraw_until_stopped();
  // The one drawn line of `stream_` (registered while a stage is active on a terminal).
  void claim_line();
  void release_line();

  bool enabled_ = false;
  std::FILE* stream_;
  std::chrono::milliseconds redraw_every_;
  std::mutex mutex_;
  std::condition_variable redraw_;
  bool stopping_ = false;
  std::thread redrawer_;
  std::string stage_;
  std::string detail_;
  std::size_t total_ = 0;
  std::size_t done_ = 0;
  bool active_ = false;
  std::chrono::steady_clock::time_point stage_start_;
  std::chrono::steady_clock::time_point last_draw_;
};

// Runs `write` (which writes whole lines to `stream`) with the active progress line of `stream`,
// if any, cleared before and drawn again after; without one, just runs it.
void write_above_progress(std::FILE* stream, const std::function<void()>& write);

// A logging sink that writes through `inner` (which writes to `stream`) by way of
// write_above_progress, so that log lines never glue onto a progress line.
std::shared_ptr<spdlog::sinks::sink> progress_aware_sink(std::shared_ptr<spdlog::sinks::sink> inner,
                                                         std::FILE* stream);

}  // namespace parley
