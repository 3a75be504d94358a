#include "frames/segments.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "core/npz.h"
#include "eval/rttm.h"
#include "frames/goldens_test_support.h"
#include "frames/output.h"
#include "testing/shared_data.h"

namespace parley::frames {
namespace {

std::vector<Turn> labelled_turns(const SlidingWindowFeature<float>& discrete) {
  std::vector<Turn> turns = to_turns(discrete);
  label_speakers(turns, speaker_order(turns));
  return turns;
}

TEST(Segments, LabellingRecordsEachTurnsSpeakerIndex) {
  // Clusters 10 and 2 sort as text ("10" < "2"), as pyannote orders them.
  std::vector<Turn> turns = {{0.0, 1.0, "", 2, -1}, {1.0, 2.0, "", 10, -1}, {2.0, 3.0, "", 7, -1}};
  label_speakers(turns, {10, 2});
  EXPECT_EQ(turns[0].speaker, "SPEAKER_01");
  EXPECT_EQ(turns[0].speaker_index, 1);
  EXPECT_EQ(turns[1].speaker, "SPEAKER_00");
  EXPECT_EQ(turns[1].speaker_index, 0);
  EXPECT_EQ(turns[2].speaker, "7");
  EXPECT_EQ(turns[2].speaker_index, -1);
}

TEST(Segments, ReproducesPyannoteRttmFromCommunity1Reconstructions) {
  PARLEY_REQUIRE_SHARED(root, "goldens/pyannote-community1");
  const auto cases = testing::community1_cases(root);
  ASSERT_FALSE(cases.empty());
  for (const auto& dir : cases) {
    const NpzArchive reconstruction = read_npz(dir / "reconstruction.npz");
    const SlidingWindowFeature<float> discrete{
        testing::npz_float(reconstruction, "discrete_diarization", dir),
        SlidingWindow(testing::npz_scalar(reconstruction, "frame_start", dir),
                      testing::npz_scalar(reconstruction, "frame_duration", dir),
                      testing::npz_scalar(reconstruction, "frame_step", dir))};
    EXPECT_EQ(testing::npz_scalar(reconstruction, "min_duration_off", dir), 0.0);
    const std::string rttm = eval::format_rttm(to_eval_turns(labelled_turns(discrete), "clip_16k"));
    EXPECT_EQ(rttm, testing::read_text(dir / "reference.rttm")) << dir;
  }
}

TEST(Segments, ReproducesSpeakrsRttmsToTheMicrosecond) {
  PARLEY_REQUIRE_SHARED(dir, "goldens/speakrs");
  for (const std::string name : {"pipeline", "3speakers", "single_speaker", "short"}) {
    const SlidingWindowFeature<float> discrete{
        read_npy(dir / (name + "_discrete_diarization_data.npy")).as<float>(),
        testing::read_window_json(dir / (name + "_discrete_diarization_window.json"))};
    // speakrs wrote its RTTMs with 6 decimals; parley writes RTTM with pyannote's 3
    // (eval/rttm.h), so the turns are compared at speakrs' precision instead of as text.
    const std::vector<Turn> turns = labelled_turns(discrete);
    const std::vector<eval::Turn> expected = eval::read_rttm(dir / (name + "_expected.rttm"));
    ASSERT_EQ(turns.size(), expected.size()) << name;
    const auto micro = [](double seconds) { return fmt::format("{:.6f}", seconds); };
    for (std::size_t i = 0; i < turns.size(); ++i) {
      SCOPED_TRACE(fmt::format("{} turn {}", name, i));
      EXPECT_EQ(expected[i].file_id, name);
      EXPECT_EQ(turns[i].speaker, expected[i].speaker);
      EXPECT_EQ(micro(turns[i].start), micro(expected[i].start));
      EXPECT_EQ(micro(turns[i].duration()), micro(expected[i].duration));
    }
  }
}

TEST(Segments, LabelsFollowStringOrderOfSpeakerIndices) {
  // 12 speakers, speaker k active on frame 2k + 1 only... and as pyannote does, labels are
  // sorted as strings: 0, 1, 10, 11, 2, ...
  NdArray<float> data({26, 12});
  for (std::size_t k = 0; k < 12; ++k) {
    data(2 * k + 1, k) = 1.0f;
    data(2 * k + 2, k) = 1.0f;
  }
  const std::vector<Turn> turns = labelled_turns({data, SlidingWindow(0.0, 1.0, 1.0)});
  ASSERT_EQ(turns.size(), 12u);
  EXPECT_EQ(speaker_order(turns), (std::vector<int>{0, 1, 10, 11, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(turns[0].speaker, "SPEAKER_00");
  EXPECT_EQ(turns[0].start, 1.5);
  EXPECT_EQ(turns[0].end, 3.5);
  EXPECT_EQ(turns[2].speaker, "SPEAKER_04");   // speaker index 2
  EXPECT_EQ(turns[10].speaker, "SPEAKER_02");  // speaker index 10
  EXPECT_EQ(turns[11].cluster, 11);
  EXPECT_EQ(turns[11].speaker, "SPEAKER_03");
}

TEST(Segments, MinDurationOffMergesTurnsOfOneSpeaker) {
  NdArray<float> data({9, 1}, {1, 1, 0, 1, 1, 0, 0, 1, 1});
  const SlidingWindowFeature<float> discrete{data, SlidingWindow(0.0, 1.0, 1.0)};
  EXPECT_EQ(to_turns(discrete).size(), 3u);  // [0.5, 2.5], [3.5, 5.5], [7.5, 8.5]
  const std::vector<Turn> merged = to_turns(discrete, 0.0, 1.5);
  ASSERT_EQ(merged.size(), 2u);
  EXPECT_EQ(merged[0].start, 0.5);
  EXPECT_EQ(merged[0].end, 5.5);
  EXPECT_EQ(merged[1].start, 7.5);
  // a turn that would start on the last frame has no duration and is dropped, as in pyannote
  NdArray<float> last_only({3, 1}, {0, 0, 1});
  EXPECT_TRUE(to_turns({last_only, SlidingWindow(0.0, 1.0, 1.0)}).empty());
  EXPECT_TRUE(to_turns({NdArray<float>({0, 0}), SlidingWindow()}).empty());
}

}  // namespace
}  // namespace parley::frames
