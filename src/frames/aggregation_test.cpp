#include "frames/aggregation.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"

namespace parley::frames {
namespace {

// Toy axes: 4-frame chunks of 4 s every 2 s, frames of 1 s every 1 s.
const SlidingWindow kChunks(0.0, 4.0, 2.0);
const SlidingWindow kFrames(0.0, 1.0, 1.0);

TEST(Aggregate, AveragesOverlappingChunks) {
  // chunk 0 covers frames 0..3, chunk 1 frames 2..5; pyannote allocates one more frame (the
  // one closest to the last chunk's end + half a frame), which no chunk covers
  NdArray<float> scores({2, 4, 1}, {1, 1, 1, 1, 0, 0, 0, 0});
  AggregateOptions options;
  options.missing = 0.0f;
  const auto result = aggregate(scores, kChunks, kFrames, options);
  EXPECT_EQ(result.data.shape(), (std::vector<std::size_t>{7, 1}));
  EXPECT_EQ(result.data.values(), (std::vector<float>{1, 1, 0.5f, 0.5f, 0, 0, 0}));
  EXPECT_EQ(result.window, SlidingWindow(0.0, 1.0, 1.0));
  EXPECT_TRUE(std::isnan(aggregate(scores, kChunks, kFrames).data(6)));

  options.skip_average = true;
  EXPECT_EQ(aggregate(scores, kChunks, kFrames, options).data.values(),
            (std::vector<float>{1, 1, 1, 1, 0, 0, 0}));
}

TEST(Aggregate, NaNScoresAreMissing) {
  const double nan = std::nan("");
  NdArray<double> scores({2, 4, 2}, {1, nan, 1, nan, 1, nan, 1, nan,  //
                                     nan, nan, 3, nan, 3, nan, nan, nan});
  AggregateOptions options;  // missing defaults to NaN as in pyannote
  const auto average = aggregate(scores, kChunks, kFrames, options);
  ASSERT_EQ(average.data.shape(), (std::vector<std::size_t>{7, 2}));
  // class 0: frames 0,1 from chunk 0 only; frame 2: chunk 0 (1) and chunk 1 (NaN) -> 1;
  // frame 3: (1 + 3) / 2; frame 4: 3; frames 5, 6: missing
  EXPECT_EQ(average.data(0, 0), 1.0f);
  EXPECT_EQ(average.data(2, 0), 1.0f);
  EXPECT_EQ(average.data(3, 0), 2.0f);
  EXPECT_EQ(average.data(4, 0), 3.0f);
  EXPECT_TRUE(std::isnan(average.data(5, 0)));
  EXPECT_TRUE(std::isnan(average.data(6, 0)));
  for (std::size_t f = 0; f < 7; ++f) EXPECT_TRUE(std::isnan(average.data(f, 1)));
  options.missing = 0.0f;
  options.skip_average = true;
  const auto summed = aggregate(scores, kChunks, kFrames, options);
  EXPECT_EQ(summed.data(3, 0), 4.0f);
  EXPECT_EQ(summed.data(5, 0), 0.0f);
  EXPECT_EQ(summed.data(0, 1), 0.0f);
}

TEST(Aggregate, WarmUpFramesWeighOnlyEpsilon) {
  // 1 s of warm-up on each side of 4 s chunks = 1 frame each side
  NdArray<float> scores({2, 4, 1}, {1, 1, 1, 1, 0, 0, 0, 0});
  AggregateOptions options;
  options.warm_up = {1.0, 1.0};
  const auto result = aggregate(scores, kChunks, kFrames, options);
  // frame 2: chunk 0 frame 2 (weight 1, score 1) + chunk 1 frame 0 (weight 1e-12, score 0)
  EXPECT_FLOAT_EQ(result.data(2, 0), 1.0f);
  // frame 3: chunk 0 frame 3 (weight 1e-12, 1) + chunk 1 frame 1 (weight 1, 0)
  EXPECT_NEAR(result.data(3, 0), 0.0f, 1e-9);
  // frame 0 only seen by chunk 0's warm-up: average of one value is that value
  EXPECT_FLOAT_EQ(result.data(0, 0), 1.0f);
}

TEST(Aggregate, HammingWindowMatchesNumpy) {
  const std::vector<double> hamming = hamming_window(5);
  const std::vector<double> numpy = {0.08000000000000002, 0.54, 1.0, 0.54, 0.08000000000000002};
  ASSERT_EQ(hamming.size(), numpy.size());
  for (std::size_t i = 0; i < numpy.size(); ++i) EXPECT_NEAR(hamming[i], numpy[i], 1e-15);
  EXPECT_EQ(hamming_window(1), (std::vector<double>{1.0}));
  EXPECT_TRUE(hamming_window(0).empty());

  NdArray<float> scores({2, 4, 1}, {1, 1, 1, 1, 0, 0, 0, 0});
  AggregateOptions options;
  options.hamming = true;
  const auto result = aggregate(scores, kChunks, kFrames, options);
  // frame 2: chunk 0 weight h[2] = 0.77 (score 1), chunk 1 weight h[0] = 0.08 (score 0)
  const std::vector<double> h4 = hamming_window(4);
  EXPECT_NEAR(result.data(2, 0), h4[2] / (h4[2] + h4[0]), 1e-6);
}

TEST(Aggregate, FrameCountMatchesSegmentation3Goldens) {
  const SlidingWindow chunks(0.0, 10.0, 1.0);
  const SlidingWindow frames(0.0, 0.0619375, 0.016875);
  EXPECT_EQ(aggregated_frame_count(218, chunks, frames), 13453);  // 01_dialogue
  EXPECT_EQ(aggregated_frame_count(21, chunks, frames), 1779);    // 02_pyannote_sample
  EXPECT_EQ(aggregated_frame_count(1, chunks, frames), 594);      // speakrs "short"
  EXPECT_EQ(chunk_start_frame(1.0, frames), 59);
  EXPECT_EQ(chunk_start_frame(2.0, frames), 119);  // 118.52 rounds up
  EXPECT_THROW(aggregate(NdArray<float>({2, 4}), chunks, frames), Error);
}

TEST(Trim, DropsWarmUpFramesAndShiftsTheChunks) {
  NdArray<float> scores({1, 10, 1}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  const auto trimmed = trim({scores, SlidingWindow(0.0, 10.0, 1.0)}, {0.1, 0.2});
  EXPECT_EQ(trimmed.data.values(), (std::vector<float>{1, 2, 3, 4, 5, 6, 7}));
  EXPECT_DOUBLE_EQ(trimmed.window.start(), 1.0);
  EXPECT_DOUBLE_EQ(trimmed.window.duration(), 7.0);
  EXPECT_DOUBLE_EQ(trimmed.window.step(), 1.0);
  EXPECT_THROW(trim({scores, SlidingWindow(0.0, 10.0, 1.0)}, {0.5, 0.5}), Error);
}

}  // namespace
}  // namespace parley::frames
