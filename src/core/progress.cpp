#include "core/progress.h"

#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <utility>
#include <vector>

namespace parley {
namespace {

// Carriage return, the line, then "erase to the end of the line": a shorter line leaves nothing
// of a longer one behind (a fixed padding did, past its width).
constexpr const char* kEraseLine = "\x1b[K";

// The progress line drawn on each stream, for write_above_progress. Its lock is taken before any
// Progress's own, never after.
struct DrawnLines {
  std::mutex mutex;
  std::vector<std::pair<std::FILE*, Progress*>> lines;
};

DrawnLines& drawn_lines() {
  static DrawnLines lines;
  return lines;
}

class ProgressAwareSink final : public spdlog::sinks::sink {
 public:
  ProgressAwareSink(std::shared_ptr<spdlog::sinks::sink> inner, std::FILE* stream)
      : inner_(std::move(inner)), stream_(stream) {}
  void log(const spdlog::details::log_msg& message) override {
    write_above_progress(stream_, [&] { inner_->log(message); });
  }
  void flush() override { inner_->flush(); }
  void set_pattern(const std::string& pattern) override { inner_->set_pattern(pattern); }
  void set_formatter(std::unique_ptr<spdlog::formatter> formatter) override {
    inner_->set_formatter(std::move(formatter));
  }

 private:
  std::shared_ptr<spdlog::sinks::sink> inner_;
  std::FILE* stream_;
};

}  // namespace

Progress::Progress(Mode mode, std::FILE* stream, std::chrono::milliseconds redraw_every)
    : stream_(stream), redraw_every_(redraw_every) {
  switch (mode) {
    case Mode::kAlways:
      enabled_ = true;
      break;
    case Mode::kNever:
      enabled_ = false;
      break;
    case Mode::kAuto:
      enabled_ = ::isatty(::fileno(stream)) == 1;
      break;
  }
  if (enabled_) redrawer_ = std::thread([this] { redraw_until_stopped(); });
}

Progress::~Progress() {
  if (active_) end();
  if (redrawer_.joinable()) {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    redraw_.notify_all();
    redrawer_.join();
  }
}

void Progress::claim_line() {
  if (!enabled_) return;
  DrawnLines& drawn = drawn_lines();
  std::lock_guard lock(drawn.mutex);
  drawn.lines.emplace_back(stream_, this);
}

void Progress::release_line() {
  if (!enabled_) return;
  DrawnLines& drawn = drawn_lines();
  std::lock_guard lock(drawn.mutex);
  std::erase(drawn.lines, std::pair<std::FILE*, Progress*>(stream_, this));
}

void Progress::redraw_until_stopped() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    redraw_.wait_for(lock, redraw_every_);
    if (stopping_) break;
    if (active_ && std::chrono::steady_clock::now() - last_draw_ >= redraw_every_) {
      // A terminal that went away (a hang-up, a closed pipe) makes the write throw: here, on a
      // thread of its own, that would end the run, so the line simply stops being redrawn.
      try {
        draw(false);
      } catch (const std::exception&) {
        break;
      }
    }
  }
}

void Progress::begin(const std::string& stage, std::size_t total) {
  bool was_active = false;
  {
    std::lock_guard lock(mutex_);
    was_active = active_;
    if (active_) draw(true);
    stage_ = stage;
    total_ = total;
    done_ = 0;
    detail_.clear();
    active_ = true;
    stage_start_ = std::chrono::steady_clock::now();
    last_draw_ = {};
    draw(false);
  }
  if (!was_active) claim_line();
}

void Progress::update(std::size_t done) {
  std::lock_guard lock(mutex_);
  if (!active_) return;
  done_ = done;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ >= std::chrono::milliseconds(100)) draw(false);
}

void Progress::update(std::size_t done, std::string detail) {
  std::lock_guard lock(mutex_);
  if (!active_) return;
  done_ = done;
  detail_ = std::move(detail);
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ >= std::chrono::milliseconds(100)) draw(false);
}

void Progress::note(const std::string& line) {
  std::lock_guard lock(mutex_);
  if (enabled_ && active_) {
    fmt::print(stream_, "\r{}{}\n", line, kEraseLine);
    draw(false);
  } else {
    fmt::print(stream_, "{}\n", line);
    std::fflush(stream_);
  }
}

void Progress::end() {
  {
    std::lock_guard lock(mutex_);
    if (!active_) return;
    if (total_ > 0) done_ = total_;
    draw(true);
    active_ = false;
  }
  release_line();
}

void Progress::draw(bool final_draw) {
  last_draw_ = std::chrono::steady_clock::now();
  if (!enabled_) return;
  const double elapsed = std::chrono::duration<double>(last_draw_ - stage_start_).count();
  std::string line;
  if (total_ > 0) {
    constexpr int kWidth = 30;
    const double fraction = std::min(1.0, static_cast<double>(done_) / static_cast<double>(total_));
    const int filled = static_cast<int>(fraction * kWidth);
    std::string bar(static_cast<std::size_t>(filled), '#');
    bar.append(static_cast<std::size_t>(kWidth - filled), '.');
    std::string eta;
    if (!final_draw && done_ > 0 && fraction < 1.0) {
      eta = fmt::format(" eta {:.0f}s", elapsed / fraction - elapsed);
    }
    line = fmt::format("{:<14} [{}] {:3.0f}% {}/{} {:.1f}s{}{}{}", stage_, bar, fraction * 100.0,
                       done_, total_, elapsed, eta, detail_.empty() ? "" : " ", detail_);
  } else {
    line = fmt::format("{:<14} {:.1f}s", stage_, elapsed);
  }
  fmt::print(stream_, "\r{}{}{}", line, kEraseLine, final_draw ? "\n" : "");
  std::fflush(stream_);
}

void write_above_progress(std::FILE* stream, const std::function<void()>& write) {
  DrawnLines& drawn = drawn_lines();
  std::lock_guard registry_lock(drawn.mutex);
  const auto line = std::find_if(drawn.lines.begin(), drawn.lines.end(),
                                 [stream](const auto& entry) { return entry.first == stream; });
  if (line == drawn.lines.end()) {
    write();
    return;
  }
  Progress& progress = *line->second;
  std::lock_guard lock(progress.mutex_);
  if (!progress.active_) {
    write();
    return;
  }
  fmt::print(stream, "\r{}", kEraseLine);
  std::fflush(stream);
  write();
  std::fflush(stream);
  progress.draw(false);
}

std::shared_ptr<spdlog::sinks::sink> progress_aware_sink(std::shared_ptr<spdlog::sinks::sink> inner,
                                                         std::FILE* stream) {
  return std::make_shared<ProgressAwareSink>(std::move(inner), stream);
}

}  // namespace parley
