#include "stream/real_time_pacer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "core/error.h"

namespace parley::stream {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::seconds;

// A clock that never sleeps: the moments the pacer asked to wait for.
struct FakeSleep {
  std::vector<StreamClock::time_point> asked;
  RealTimePacer::SleepUntil function() {
    return [this](StreamClock::time_point until) { asked.push_back(until); };
  }
};

TEST(StreamRealTimePacer, StampsEachBlockWithWhenItsLastFrameWasCaptured) {
  FakeSleep sleep;
  const StreamClock::time_point start{seconds(100)};
  RealTimePacer pacer(16000.0, start, sleep.function());
  EXPECT_EQ(pacer.arrive(320), start + milliseconds(20));
  EXPECT_EQ(pacer.arrive(320), start + milliseconds(40));
  EXPECT_EQ(pacer.arrive(0), start + milliseconds(40));  // nothing new: due at once
  EXPECT_EQ(pacer.arrive(100), start + microseconds(46250));
  EXPECT_DOUBLE_EQ(pacer.seconds(), 0.04625);
  // It waits for exactly the moments it returns.
  const std::vector<StreamClock::time_point> expected{
      start + milliseconds(20), start + milliseconds(40), start + milliseconds(40),
      start + microseconds(46250)};
  EXPECT_EQ(sleep.asked, expected);
}

TEST(StreamRealTimePacer, BlocksOfAnySizeDoNotDriftFromTheRate) {
  // An hour of 44.1 kHz in blocks of 437 frames (not a divisor of the rate), then the rest: the
  // last stamp is the hour to the nanosecond, as from the frame count, however many blocks.
  FakeSleep sleep;
  const StreamClock::time_point start{seconds(5)};
  RealTimePacer pacer(44100.0, start, sleep.function());
  const std::uint64_t total = 3600ULL * 44100ULL;
  std::uint64_t fed = 0;
  StreamClock::time_point last;
  while (fed < total) {
    const std::uint64_t n = std::min<std::uint64_t>(437, total - fed);
    last = pacer.arrive(n);
    fed += n;
  }
  EXPECT_EQ(last, start + seconds(3600));
  EXPECT_EQ(sleep.asked.size(), (total + 436) / 437);
}

TEST(StreamRealTimePacer, ALateCallerGetsTheDueMomentNotNow) {
  // With the real clock: a feeder a second behind is not held back, and its block still carries
  // the moment it was due (the audio waited in its backlog meanwhile).
  const StreamClock::time_point start = StreamClock::now() - seconds(1);
  RealTimePacer pacer(16000.0, start);
  const StreamClock::time_point due = pacer.arrive(8000);
  EXPECT_EQ(due, start + milliseconds(500));
  EXPECT_LT(StreamClock::now() - start, seconds(10));  // it did not sleep toward anything
  // On time: it sleeps until the block is complete.
  const StreamClock::time_point now = StreamClock::now();
  RealTimePacer punctual(16000.0, now);
  const StreamClock::time_point arrival = punctual.arrive(800);
  EXPECT_EQ(arrival, now + milliseconds(50));
  EXPECT_GE(StreamClock::now(), arrival);
}

TEST(StreamRealTimePacer, NeedsAPositiveRate) {
  EXPECT_THROW(RealTimePacer(0.0, StreamClock::now()), Error);
  EXPECT_THROW(RealTimePacer(-16000.0, StreamClock::now()), Error);
}

}  // namespace
}  // namespace parley::stream
