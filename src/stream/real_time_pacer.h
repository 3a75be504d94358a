#pragma once
// Audio fed at the pace of a capture device, from a file or any source that has it all at once:
// `parley stream --realtime` and stream_bench's real-time runs pace the same way here.
#include <cstdint>
#include <functional>

#include "stream/stream_diarizer.h"

namespace parley::stream {

class RealTimePacer {
 public:
  // Waits until a moment of StreamClock (std::this_thread::sleep_until; tests pass a fake).
  using SleepUntil = std::function<void(StreamClock::time_point)>;

  // Audio of `rate` frames a second (a frame: one sample of every channel) whose first sample
  // was captured at `start`.
  RealTimePacer(double rate, StreamClock::time_point start, SleepUntil sleep_until = {});

  // The next `frames` frames: sleeps until the last of them would have been captured and returns
  // that moment, the arrival to state to StreamDiarizer::push(). A block is due only when it is
  // complete, and a caller that fell behind gets the due moment, not the later now, so the wait
  // of audio in its backlog counts in the events' latencies. Due moments come from the whole
  // count of frames so far, so blocks of any sizes never drift from the rate.
  StreamClock::time_point arrive(std::uint64_t frames);

  double seconds() const;  // audio paced so far

 private:
  double rate_;
  StreamClock::time_point start_;
  SleepUntil sleep_until_;
  std::uint64_t frames_ = 0;
};

}  // namespace parley::stream
