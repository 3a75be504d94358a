#pragma once
// Wall-clock time per named pipeline stage, in the order stages first ran; feeds `--verbose`
// summaries and `parley bench`.
#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace parley {

// Wall-clock seconds from `start` until now.
inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

class StageTimes {
 public:
  void add(const std::string& stage, double seconds) {
    for (auto& [name, total] : entries_) {
      if (name == stage) {
        total += seconds;
        return;
      }
    }
    entries_.emplace_back(stage, seconds);
  }
  const std::vector<std::pair<std::string, double>>& entries() const { return entries_; }
  double total() const {
    double sum = 0.0;
    for (const auto& entry : entries_) sum += entry.second;
    return sum;
  }

 private:
  std::vector<std::pair<std::string, double>> entries_;
};

// Adds the lifetime of this object to `times` under `stage`.
class ScopedStageTimer {
 public:
  ScopedStageTimer(StageTimes& times, std::string stage)
      : times_(times), stage_(std::move(stage)), start_(std::chrono::steady_clock::now()) {}
  ~ScopedStageTimer() { times_.add(stage_, seconds_since(start_)); }
  ScopedStageTimer(const ScopedStageTimer&) = delete;
  ScopedStageTimer& operator=(const ScopedStageTimer&) = delete;

 private:
  StageTimes& times_;
  std::string stage_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace parley
