#include "server/metrics.h"

#include <fmt/format.h>

namespace parley::server {

void Metrics::observe_stage(const std::string& stage, double seconds) {
  const std::lock_guard lock(mutex_);
  Histogram& histogram = stages_[stage];
  for (std::size_t bucket = 0; bucket < kBuckets.size(); ++bucket) {
    if (seconds <= kBuckets[bucket]) {
      ++histogram.counts[bucket];
      break;
    }
  }
  ++histogram.count;
  histogram.sum += seconds;
}

void Metrics::add_processed_audio(double seconds) {
  const std::lock_guard lock(mutex_);
  processed_audio_seconds_ += seconds;
}

void Metrics::count_request(int status) {
  const std::lock_guard lock(mutex_);
  ++requests_by_status_[status];
}

bool Metrics::open_stream(std::size_t max) {
  const std::lock_guard lock(mutex_);
  if (active_streams_ >= max) return false;
  ++active_streams_;
  ++streams_total_;
  return true;
}

void Metrics::close_stream() {
  const std::lock_guard lock(mutex_);
  --active_streams_;
}

void Metrics::add_streamed_audio(double seconds) {
  const std::lock_guard lock(mutex_);
  streamed_audio_seconds_ += seconds;
}

std::size_t Metrics::active_streams() const {
  const std::lock_guard lock(mutex_);
  return active_streams_;
}

std::string Metrics::render(const MetricsSnapshot& snapshot) const {
  std::string text;
  text +=
      "# HELP parley_jobs Jobs in the store by state.\n"
      "# TYPE parley_jobs gauge\n";
  for (const auto& [state, count] : snapshot.jobs_by_state) {
    text += fmt::format("parley_jobs{{state=\"{}\"}} {}\n", to_string(state), count);
  }
  text += fmt::format(
      "# HELP parley_queue_depth Jobs waiting for the engine.\n"
      "# TYPE parley_queue_depth gauge\n"
      "parley_queue_depth {}\n",
      snapshot.queue_depth);
  const std::lock_guard lock(mutex_);
  text += fmt::format(
      "# HELP parley_audio_seconds_processed_total Seconds of audio diarized since the server "
      "started.\n"
      "# TYPE parley_audio_seconds_processed_total counter\n"
      "parley_audio_seconds_processed_total {}\n",
      processed_audio_seconds_);
  text += fmt::format(
      "# HELP parley_live_streams Live streams (/v1/stream) open now.\n"
      "# TYPE parley_live_streams gauge\n"
      "parley_live_streams {}\n"
      "# HELP parley_live_streams_total Live streams opened since the server started.\n"
      "# TYPE parley_live_streams_total counter\n"
      "parley_live_streams_total {}\n"
      "# HELP parley_live_audio_seconds_total Seconds of audio received by live streams.\n"
      "# TYPE parley_live_audio_seconds_total counter\n"
      "parley_live_audio_seconds_total {}\n",
      active_streams_, streams_total_, streamed_audio_seconds_);
  text +=
      "# HELP parley_http_requests_total HTTP requests answered, by status.\n"
      "# TYPE parley_http_requests_total counter\n";
  for (const auto& [status, count] : requests_by_status_) {
    text += fmt::format("parley_http_requests_total{{status=\"{}\"}} {}\n", status, count);
  }
  text +=
      "# HELP parley_stage_seconds Seconds a recording spent in each stage of the engine.\n"
      "# TYPE parley_stage_seconds histogram\n";
  for (const auto& [stage, histogram] : stages_) {
    std::uint64_t cumulative = 0;
    for (std::size_t bucket = 0; bucket < kBuckets.size(); ++bucket) {
      cumulative += histogram.counts[bucket];
      text += fmt::format("parley_stage_seconds_bucket{{stage=\"{}\",le=\"{}\"}} {}\n", stage,
                          kBuckets[bucket], cumulative);
    }
    text += fmt::format("parley_stage_seconds_bucket{{stage=\"{}\",le=\"+Inf\"}} {}\n", stage,
                        histogram.count);
    text += fmt::format("parley_stage_seconds_sum{{stage=\"{}\"}} {}\n", stage, histogram.sum);
    text += fmt::format("parley_stage_seconds_count{{stage=\"{}\"}} {}\n", stage, histogram.count);
  }
  if (!snapshot.devices.empty()) {
    text +=
        "# HELP parley_device_memory_bytes Accelerator memory by device and kind (total, free).\n"
        "# TYPE parley_device_memory_bytes gauge\n";
    for (const auto& device : snapshot.devices) {
      for (const auto& [kind, bytes] :
           {std::pair{"total", device.total_bytes}, std::pair{"free", device.free_bytes}}) {
        text += fmt::format(
            "parley_device_memory_bytes{{provider=\"{}\",device=\"{}\",kind=\"{}\"}} {}\n",
            device.provider, device.device, kind, bytes);
      }
    }
  }
  return text;
}

}  // namespace parley::server
