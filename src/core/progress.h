#pragma once
// Progress on long work, drawn on stderr as one rewritten line. Silent when stderr is not a
// terminal or when the user asked for quiet output, so logs and pipes stay clean.
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <mutex>
#include <string>

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

class Progress : public ProgressSink {
 public:
  enum class Mode { kAuto, kAlways, kNever };
  explicit Progress(Mode mode = Mode::kAuto, std::FILE* stream = stderr);
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
  void draw(bool final_draw);

  bool enabled_ = false;
  std::FILE* stream_;
  std::mutex mutex_;
  std::string stage_;
  std::string detail_;
  std::size_t total_ = 0;
  std::size_t done_ = 0;
  bool active_ = false;
  std::chrono::steady_clock::time_point stage_start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace parley
