#include "stream/real_time_pacer.h"

#include <thread>
#include <utility>

#include "core/error.h"

namespace parley::stream {

RealTimePacer::RealTimePacer(double rate, StreamClock::time_point start, SleepUntil sleep_until)
    : rate_(rate), start_(start), sleep_until_(std::move(sleep_until)) {
  if (!(rate_ > 0)) fail("real-time pacing needs a positive sample rate (got {})", rate_);
  if (!sleep_until_) {
    sleep_until_ = [](StreamClock::time_point until) { std::this_thread::sleep_until(until); };
  }
}

StreamClock::time_point RealTimePacer::arrive(std::uint64_t frames) {
  frames_ += frames;
  const StreamClock::time_point due = start_ + std::chrono::duration_cast<StreamClock::duration>(
                                                   std::chrono::duration<double>(seconds()));
  sleep_until_(due);
  return due;
}

double RealTimePacer::seconds() const { return static_cast<double>(frames_) / rate_; }

}  // namespace parley::stream
