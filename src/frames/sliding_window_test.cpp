#include "frames/sliding_window.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/error.h"

namespace parley::frames {
namespace {

TEST(SlidingWindow, Segmentation3FramesFollowTheSincNetReceptiveField) {
  // 991 samples of receptive field, 270 samples between frames, centred on frame 0's window.
  EXPECT_EQ(conv_receptive_field_size(1, segmentation3_layers()), 991);
  EXPECT_EQ(conv_receptive_field_size(2, segmentation3_layers()), 1261);
  EXPECT_EQ(conv_receptive_field_center(0, segmentation3_layers()), 495);
  const SlidingWindow frames = segmentation3_frames();
  EXPECT_EQ(frames.start(), 0.0);
  EXPECT_EQ(frames.duration(), 0.0619375);
  EXPECT_EQ(frames.step(), 0.016875);
  EXPECT_EQ(segmentation3_frames_per_chunk(), 589);
  EXPECT_EQ(conv_num_frames(80000, segmentation3_layers()), 293);
  EXPECT_EQ(conv_num_frames(100, segmentation3_layers()), 0);
}

TEST(SlidingWindow, FramesAndClosestFrame) {
  const SlidingWindow frames(0.0, 0.0619375, 0.016875);
  EXPECT_EQ(frames[0], (Segment{0.0, 0.0619375}));
  EXPECT_DOUBLE_EQ(frames[2].start, 0.03375);
  EXPECT_DOUBLE_EQ(frames.middle(0), 0.03096875);
  EXPECT_EQ(frames.closest_frame(0.03096875), 0);
  EXPECT_EQ(frames.closest_frame(1.0 + 0.03096875), 59);  // 1 / 0.016875 = 59.26
  // ties go to the even frame, as np.rint does: t such that (t - d/2) / step = 0.5 and 1.5
  const SlidingWindow unit(0.0, 1.0, 1.0);
  EXPECT_EQ(unit.closest_frame(1.0), 0);
  EXPECT_EQ(unit.closest_frame(2.0), 2);
  // 218 chunks of 10 s every 1 s end at 227 s: the frame whose middle is closest is 13452
  EXPECT_EQ(frames.closest_frame(227.0 + 0.5 * frames.duration()), 13452);
}

TEST(SlidingWindow, CropRangesAndSamplesMatchPyannote) {
  const SlidingWindow window(0.0, 2.0, 1.0);
  // loose: windows intersecting [3, 7.5] are those starting in [1, 7]
  EXPECT_EQ(window.crop({3.0, 7.5}, Alignment::kLoose).first, 1);
  EXPECT_EQ(window.crop({3.0, 7.5}, Alignment::kLoose).last, 8);
  // strict: windows inside [3, 7.5] start in [3, 5]
  EXPECT_EQ(window.crop({3.0, 7.5}, Alignment::kStrict).first, 3);
  EXPECT_EQ(window.crop({3.0, 7.5}, Alignment::kStrict).last, 6);
  // center: middles closest to 3 and 7.5 (window k has middle k + 1; 6.5 rounds to 6)
  EXPECT_EQ(window.crop({3.0, 7.5}, Alignment::kCenter).first, 2);
  EXPECT_EQ(window.crop({3.0, 7.5}, Alignment::kCenter).last, 7);
  EXPECT_EQ(window.samples(4.5, Alignment::kStrict), 3);
  EXPECT_EQ(window.samples(4.5, Alignment::kLoose), 6);
  EXPECT_EQ(window.samples(4.5, Alignment::kCenter), 4);
  // range_to_segment: frame i stands for [middle - step/2, middle + step/2], frame 0 from start
  EXPECT_EQ(window.range_to_segment(0, 3), (Segment{0.0, 3.5}));
  EXPECT_EQ(window.range_to_segment(2, 2), (Segment{2.5, 4.5}));
}

TEST(SlidingWindow, SegmentEmptinessUsesMicrosecondPrecision) {
  EXPECT_FALSE((Segment{1.0, 1.0000005}).non_empty());
  EXPECT_EQ((Segment{1.0, 1.0000005}).duration(), 0.0);
  EXPECT_TRUE((Segment{1.0, 1.00001}).non_empty());
  EXPECT_TRUE((Segment{0.0, 2.0}) < (Segment{0.0, 3.0}));
  EXPECT_TRUE((Segment{0.0, 5.0}) < (Segment{1.0, 2.0}));
  EXPECT_THROW(SlidingWindow(0.0, 0.0, 1.0), Error);
  EXPECT_THROW(SlidingWindow(0.0, 1.0, -1.0), Error);
}

TEST(ChunkPlan, CountsChunksLikeInferenceSlide) {
  struct Case {
    std::int64_t samples;
    double step;
    std::int64_t full;
    bool last;
  };
  const std::vector<Case> cases = {
      {0, 1.0, 0, true},          // empty: one chunk of zeros
      {80000, 1.0, 0, true},      // 5 s: one padded chunk
      {160000, 1.0, 1, false},    // exactly 10 s
      {168000, 1.0, 1, true},     // 10.5 s
      {480000, 1.0, 21, false},   // 30 s (pyannote-sample: 21 chunks)
      {480000, 2.0, 11, false},   // 30 s, fast mode
      {496000, 2.0, 11, true},    // 31 s, fast mode
      {3627040, 1.0, 217, true},  // 226.69 s: 218 chunks as the 01_dialogue golden
  };
  for (const Case& c : cases) {
    const ChunkPlan plan = plan_chunks(c.samples, 16000, 10.0, c.step);
    EXPECT_EQ(plan.window_samples, 160000);
    EXPECT_EQ(plan.step_samples, static_cast<std::int64_t>(c.step * 16000));
    EXPECT_EQ(plan.num_full_chunks, c.full) << c.samples;
    EXPECT_EQ(plan.has_last_chunk, c.last) << c.samples;
    EXPECT_EQ(plan.chunks(), SlidingWindow(0.0, 10.0, c.step));
  }
  EXPECT_THROW(plan_chunks(1000, 16000, 10.0, 11.0), Error);
  EXPECT_THROW(plan_chunks(1000, 0), Error);
}

TEST(ChunkPlan, CopiesChunksWithZeroPaddedTail) {
  // 2.5 s of audio at 4 Hz with 1 s chunks every 0.5 s: samples 0..9
  std::vector<float> waveform(10);
  for (std::size_t i = 0; i < waveform.size(); ++i) waveform[i] = static_cast<float>(i + 1);
  const ChunkPlan plan = plan_chunks(10, 4, 1.0, 0.5);
  EXPECT_EQ(plan.window_samples, 4);
  EXPECT_EQ(plan.step_samples, 2);
  ASSERT_EQ(plan.num_chunks(), 4);  // full chunks at 0, 2, 4, 6; 6..9 fills exactly
  EXPECT_FALSE(plan.has_last_chunk);
  std::vector<float> chunk(4);
  copy_chunk(waveform, plan, 3, chunk);
  EXPECT_EQ(chunk, (std::vector<float>{7, 8, 9, 10}));

  const ChunkPlan padded = plan_chunks(9, 4, 1.0, 0.5);
  ASSERT_EQ(padded.num_chunks(), 4);  // 3 full chunks + one starting at sample 6
  EXPECT_TRUE(padded.has_last_chunk);
  EXPECT_EQ(padded.valid_samples(3), 3);
  std::vector<float> short_waveform(waveform.begin(), waveform.begin() + 9);
  copy_chunk(short_waveform, padded, 3, chunk);
  EXPECT_EQ(chunk, (std::vector<float>{7, 8, 9, 0}));

  const ChunkPlan empty = plan_chunks(0, 4, 1.0, 0.5);
  ASSERT_EQ(empty.num_chunks(), 1);
  copy_chunk(std::span<const float>(), empty, 0, chunk);
  EXPECT_EQ(chunk, (std::vector<float>{0, 0, 0, 0}));
  EXPECT_THROW(copy_chunk(short_waveform, padded, 4, chunk), Error);
}

}  // namespace
}  // namespace parley::frames
