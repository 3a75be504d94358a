#include "core/progress.h"

#include <unistd.h>

#include <fmt/format.h>

#include <utility>

namespace parley {

Progress::Progress(Mode mode, std::FILE* stream) : stream_(stream) {
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
}

Progress::~Progress() {
  if (active_) end();
}

void Progress::begin(const std::string& stage, std::size_t total) {
  std::lock_guard lock(mutex_);
  if (active_) {
    draw(true);
  }
  stage_ = stage;
  total_ = total;
  done_ = 0;
  detail_.clear();
  active_ = true;
  stage_start_ = std::chrono::steady_clock::now();
  last_draw_ = {};
  draw(false);
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
    fmt::print(stream_, "\r{:<79}\n", line);
    draw(false);
  } else {
    fmt::print(stream_, "{}\n", line);
    std::fflush(stream_);
  }
}

void Progress::end() {
  std::lock_guard lock(mutex_);
  if (!active_) return;
  if (total_ > 0) done_ = total_;
  draw(true);
  active_ = false;
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
  fmt::print(stream_, "\r{:<79}{}", line, final_draw ? "\n" : "");
  std::fflush(stream_);
}

}  // namespace parley
