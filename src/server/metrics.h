#pragma once
// What /metrics reports, in the Prometheus text exposition format (version 0.0.4): counters and
// per-stage latency histograms the queue feeds as jobs run, and gauges read when scraped.
#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "server/job_store.h"

namespace parley::server {

// Gauges read at scrape time.
struct MetricsSnapshot {
  std::map<JobState, std::size_t> jobs_by_state;
  std::size_t queue_depth = 0;
  struct Device {
    std::string provider;
    int device = 0;
    std::uintmax_t total_bytes = 0;
    std::uintmax_t free_bytes = 0;
  };
  std::vector<Device> devices;  // empty on the CPU
};

class Metrics {
 public:
  // Seconds a recording spent in one stage of the engine ("decoding", "networks" including its
  // wait for an engine, "clustering").
  void observe_stage(const std::string& stage, double seconds);
  void add_processed_audio(double seconds);
  void count_request(int status);
  // Live streams (/v1/stream): one more open unless `max` are (false then), one fewer, and the
  // seconds of audio they received.
  bool open_stream(std::size_t max);
  void close_stream();
  void add_streamed_audio(double seconds);
  std::size_t active_streams() const;

  std::string render(const MetricsSnapshot& snapshot) const;

 private:
  // Upper bounds in seconds, from a short call on a GPU to hours of audio on a CPU core
  // (docs/benchmarks.md has the speeds they bracket).
  static constexpr std::array<double, 12> kBuckets = {0.05, 0.1, 0.25, 0.5, 1,   2.5,
                                                      5,    10,  25,   60,  150, 600};
  struct Histogram {
    std::array<std::uint64_t, kBuckets.size()> counts{};  // not cumulative
    std::uint64_t count = 0;
    double sum = 0.0;
  };
  mutable std::mutex mutex_;
  std::map<std::string, Histogram> stages_;
  double processed_audio_seconds_ = 0.0;
  std::map<int, std::uint64_t> requests_by_status_;
  std::size_t active_streams_ = 0;
  std::uint64_t streams_total_ = 0;
  double streamed_audio_seconds_ = 0.0;
};

}  // namespace parley::server
