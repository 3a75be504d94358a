#pragma once
// Progress on long work, drawn on stderr as one rewritten line. Silent when stderr is not a
// terminal or when the user asked for quiet output, so logs and pipes stay clean.
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <mutex>
#include <string>

namespace parley {

class Progress {
 public:
  enum class Mode { kAuto, kAlways, kNever };
  explicit Progress(Mode mode = Mode::kAuto, std::FILE* stream = stderr);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  bool enabled() const { return enabled_; }

  // Starts a named stage with `total` units of work (0 when unknown).
  void begin(const std::string& stage, std::size_t total);
  // Records `done` units finished so far in the current stage; thread-safe, redraws at most
  // ten times a second.
  void update(std::size_t done);
  // The same, with a few words drawn after the count (rates, totals so far).
  void update(std::size_t done, std::string detail);
  // Prints `line` on a line of its own above the progress line (which is drawn again), so that
  // messages during long work do not tear it; without a terminal, just the line.
  void note(const std::string& line);
  // Finishes the current stage and leaves its final line on screen.
  void end();

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
