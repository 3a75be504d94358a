#include "frames/binarize.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace parley::frames {
namespace {

TEST(BinarizeScores, AppliesHysteresis) {
  NdArray<float> scores({6, 1}, {0.2f, 0.6f, 0.45f, 0.35f, 0.55f, 0.7f});
  EXPECT_EQ(binarize_scores(scores, 0.5f, 0.4f).values(), (std::vector<float>{0, 1, 1, 0, 1, 1}));
  // without offset, offset = onset: 0.45 < 0.5 switches off
  EXPECT_EQ(binarize_scores(scores, 0.5f).values(), (std::vector<float>{0, 1, 0, 0, 1, 1}));
  // an offset of 0 also means "same as onset" (pyannote: `offset or onset`)
  EXPECT_EQ(binarize_scores(scores, 0.5f, 0.0f).values(), (std::vector<float>{0, 1, 0, 0, 1, 1}));
}

TEST(BinarizeScores, InitialStateDecidesUndefinedLeadingFrames) {
  NdArray<float> scores({2, 2}, {0.45f, 0.42f, 0.45f, 0.3f});
  // default: first score >= (onset + offset) / 2 = 0.45 -> active; class 1: 0.42 < 0.45
  EXPECT_EQ(binarize_scores(scores, 0.5f, 0.4f).values(), (std::vector<float>{1, 0, 1, 0}));
  EXPECT_EQ(binarize_scores(scores, 0.5f, 0.4f, false).values(), (std::vector<float>{0, 0, 0, 0}));
  EXPECT_EQ(binarize_scores(scores, 0.5f, 0.4f, true).values(), (std::vector<float>{1, 1, 1, 0}));
}

TEST(BinarizeScores, TreatsChunksSeparatelyAndNaNAsZero) {
  NdArray<float> scores({2, 2, 1}, {0.9f, 0.45f, std::nanf(""), 0.45f});
  EXPECT_EQ(binarize_scores(scores, 0.5f, 0.4f).values(), (std::vector<float>{1, 1, 0, 0}));
  EXPECT_THROW(binarize_scores(NdArray<float>({3})), Error);
}

TEST(TrackName, FollowsPyannoteStringGenerator) {
  EXPECT_EQ(track_name(0), "A");
  EXPECT_EQ(track_name(25), "Z");
  EXPECT_EQ(track_name(26), "AA");
  EXPECT_EQ(track_name(27), "AB");
  EXPECT_EQ(track_name(26 + 26 * 26 - 1), "ZZ");
  EXPECT_EQ(track_name(26 + 26 * 26), "AAA");
}

// Frames of 1 s every 1 s: frame i has middle i + 0.5.
SlidingWindowFeature<float> columns(std::vector<std::vector<float>> per_class) {
  const std::size_t frames = per_class.front().size();
  NdArray<float> data({frames, per_class.size()});
  for (std::size_t k = 0; k < per_class.size(); ++k) {
    for (std::size_t f = 0; f < frames; ++f) data(f, k) = per_class[k][f];
  }
  return {std::move(data), SlidingWindow(0.0, 1.0, 1.0)};
}

TEST(BinarizeRegions, RegionsRunBetweenFrameMiddles) {
  const auto scores = columns({{0, 1, 1, 0, 0, 1, 1, 1}, {1, 1, 0, 0, 0, 0, 0, 0}});
  const std::vector<Region> regions = binarize_regions(scores);
  ASSERT_EQ(regions.size(), 3u);
  EXPECT_EQ(regions[0].segment, (Segment{0.5, 2.5}));
  EXPECT_EQ(regions[0].label, 1);
  EXPECT_EQ(regions[0].track, "B");
  EXPECT_EQ(regions[1].segment, (Segment{1.5, 3.5}));
  EXPECT_EQ(regions[1].label, 0);
  // active until the end: closes at the last frame's middle
  EXPECT_EQ(regions[2].segment, (Segment{5.5, 7.5}));
  EXPECT_EQ(regions[2].label, 0);
}

TEST(BinarizeRegions, MinDurationOffFillsShortGapsOfTheSameClass) {
  const auto scores = columns({{0, 1, 1, 0, 0, 1, 1, 1}, {1, 1, 0, 0, 0, 0, 0, 0}});
  BinarizeOptions options;
  options.min_duration_off = 2.5;  // gap 3.5 -> 5.5 is 2 s
  std::vector<Region> regions = binarize_regions(scores, options);
  ASSERT_EQ(regions.size(), 2u);
  EXPECT_EQ(regions[0].segment, (Segment{0.5, 2.5}));
  EXPECT_EQ(regions[0].track, "B");  // support renames tracks: label 0 -> A, label 1 -> B
  EXPECT_EQ(regions[1].segment, (Segment{1.5, 7.5}));
  EXPECT_EQ(regions[1].track, "A");
  options.min_duration_off = 2.0;  // a gap of exactly min_duration_off stays
  EXPECT_EQ(binarize_regions(scores, options).size(), 3u);
}

TEST(BinarizeRegions, MinDurationOnAndPadding) {
  const auto scores = columns({{0, 1, 1, 0, 0, 1, 1, 1}, {1, 1, 0, 0, 0, 0, 0, 0}});
  BinarizeOptions options;
  options.min_duration_on = 2.5;
  std::vector<Region> regions = binarize_regions(scores, options);
  ASSERT_EQ(regions.size(), 0u);  // all regions last 2 s
  options.min_duration_on = 0.0;
  options.pad_onset = 0.25;
  options.pad_offset = 1.0;  // class 0: [1.25, 4.5] and [5.25, 8.5] stay apart
  regions = binarize_regions(scores, options);
  ASSERT_EQ(regions.size(), 3u);
  EXPECT_EQ(regions[0].segment, (Segment{0.25, 3.5}));
  EXPECT_EQ(regions[1].segment, (Segment{1.25, 4.5}));
  EXPECT_EQ(regions[2].segment, (Segment{5.25, 8.5}));
  options.pad_offset = 2.0;  // [1.25, 5.5] now overlaps [5.25, 9.5]: merged
  regions = binarize_regions(scores, options);
  ASSERT_EQ(regions.size(), 2u);
  EXPECT_EQ(regions[1].segment, (Segment{1.25, 9.5}));
}

TEST(BinarizeRegions, IdenticalSegmentsAreOrderedByTrackName) {
  // 28 classes active on the same frames: tracks A..Z, AA, AB sort as strings
  std::vector<std::vector<float>> per_class(28, std::vector<float>{0, 1, 1, 0});
  const std::vector<Region> regions = binarize_regions(columns(per_class));
  ASSERT_EQ(regions.size(), 28u);
  EXPECT_EQ(regions[0].label, 0);
  EXPECT_EQ(regions[1].label, 26);
  EXPECT_EQ(regions[2].label, 27);
  EXPECT_EQ(regions[3].label, 1);
  EXPECT_EQ(regions[27].label, 25);
}

TEST(BinarizeRegions, EdgeCases) {
  // no frames, one frame (a zero-length region is empty), silence
  EXPECT_TRUE(binarize_regions({NdArray<float>({0, 2}), SlidingWindow(0.0, 1.0, 1.0)}).empty());
  EXPECT_TRUE(binarize_regions(columns({{1}})).empty());
  BinarizeOptions padded;
  padded.pad_offset = 0.5;
  const auto one = binarize_regions(columns({{1}}), padded);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].segment, (Segment{0.5, 1.0}));
  EXPECT_TRUE(binarize_regions(columns({{0, 0, 0}})).empty());
  EXPECT_THROW(binarize_regions({NdArray<float>({2}), SlidingWindow()}), Error);
}

}  // namespace
}  // namespace parley::frames
