#include "stream/live_names.h"

#include <gtest/gtest.h>

#include <set>

#include "frames/segments.h"

namespace parley::stream {
using frames::Turn;
namespace {

Turn turn(double start, double end, int speaker) {
  Turn t;
  t.start = start;
  t.end = end;
  t.speaker = frames::speaker_label(static_cast<std::size_t>(speaker));
  t.cluster = speaker;
  t.speaker_index = speaker;
  return t;
}

// A batch result of `turns` whose speaker i has the embedding row (i, i, i).
pipeline::DiarizationResult batch_of(std::vector<Turn> turns, std::size_t speakers) {
  pipeline::DiarizationResult batch;
  batch.uri = "rec";
  batch.turns = turns;
  batch.exclusive_turns = std::move(turns);
  batch.speaker_count = speakers;
  batch.speaker_embeddings = NdArray<float>({speakers, 3});
  for (std::size_t s = 0; s < speakers; ++s) {
    for (std::size_t d = 0; d < 3; ++d) batch.speaker_embeddings(s, d) = static_cast<float>(s);
  }
  return batch;
}

// The label each batch speaker got (by its embedding row, which travels with it), and checks
// that the turns, the exclusive turns and the rows agree and that the labels have no gap.
std::vector<int> labels_of_batch_speakers(const pipeline::DiarizationResult& original,
                                          const pipeline::DiarizationResult& named) {
  EXPECT_EQ(named.speaker_count, original.speaker_count);
  EXPECT_EQ(named.speaker_embeddings.dim(0), original.speaker_count);
  std::vector<int> label(original.speaker_count, -1);
  for (std::size_t row = 0; row < named.speaker_embeddings.dim(0); ++row) {
    label[static_cast<std::size_t>(named.speaker_embeddings(row, 0))] = static_cast<int>(row);
  }
  std::set<int> seen;
  for (const auto& [before, after] :
       {std::pair{&original.turns, &named.turns},
        std::pair{&original.exclusive_turns, &named.exclusive_turns}}) {
    EXPECT_EQ(after->size(), before->size());
    for (std::size_t i = 0; i < after->size(); ++i) {
      const Turn& a = (*after)[i];
      const Turn& b = (*before)[i];
      EXPECT_EQ(a.start, b.start);
      EXPECT_EQ(a.end, b.end);
      EXPECT_EQ(a.speaker_index, label[static_cast<std::size_t>(b.speaker_index)]);
      EXPECT_EQ(a.speaker, frames::speaker_label(static_cast<std::size_t>(a.speaker_index)));
      seen.insert(a.speaker_index);
    }
  }
  // Labels 0 .. k-1, as batch output numbers them.
  EXPECT_EQ(seen.size(), original.speaker_count);
  if (!seen.empty()) {
    EXPECT_EQ(*seen.rbegin(), static_cast<int>(original.speaker_count) - 1);
  }
  return label;
}

TEST(UnderLiveNames, TheLargestOverlapWins) {
  // Batch 0 overlaps live 1 for 8 s and live 0 for 2 s; batch 1 overlaps live 0 for 5 s.
  const std::vector<Turn> live{turn(0, 2, 0), turn(2, 10, 1), turn(10, 15, 0)};
  const auto batch = batch_of({turn(0, 10, 0), turn(10, 15, 1)}, 2);
  const auto named = under_live_names(live, batch);
  EXPECT_EQ(labels_of_batch_speakers(batch, named), (std::vector<int>{1, 0}));
  EXPECT_EQ(named.turns[0].speaker, "SPEAKER_01");
  EXPECT_EQ(named.uri, "rec");
}

TEST(UnderLiveNames, OneToOneAssignmentNotEachSpeakersBest) {
  // Both batch speakers overlap live 0 most; the assignment gives the pair of the larger total.
  const std::vector<Turn> live{turn(0, 10, 0), turn(10, 13, 1)};
  const auto batch = batch_of({turn(0, 6, 0), turn(6, 13, 1)}, 2);
  // batch 0: live 0 6 s; batch 1: live 0 4 s, live 1 3 s. 0->0 and 1->1 (9 s) beats 1->0 (4 s).
  EXPECT_EQ(labels_of_batch_speakers(batch, under_live_names(live, batch)),
            (std::vector<int>{0, 1}));
}

TEST(UnderLiveNames, UnmatchedBatchSpeakersTakeTheNextFreeLabel) {
  // One live speaker over batch 1; batch 0 and 2 overlap nobody.
  const std::vector<Turn> live{turn(5, 10, 0)};
  const auto batch = batch_of({turn(0, 4, 0), turn(5, 10, 1), turn(11, 14, 2)}, 3);
  EXPECT_EQ(labels_of_batch_speakers(batch, under_live_names(live, batch)),
            (std::vector<int>{1, 0, 2}));
}

TEST(UnderLiveNames, LiveSpeakersWithoutBatchTurnsAreDropped) {
  // Live 1 speaks where the batch hears nobody, live 3 over batch 1: 4 live labels, 2 batch
  // speakers. Live 3 is past the batch's count, so batch 1 takes the lowest free label; live 1
  // and 2 vanish. Two speakers, rows 0 and 1: what `parley diarize` gives.
  const std::vector<Turn> live{turn(0, 5, 0), turn(6, 7, 1), turn(8, 9, 2), turn(10, 20, 3)};
  const auto batch = batch_of({turn(0, 5, 0), turn(10, 20, 1)}, 2);
  const auto named = under_live_names(live, batch);
  EXPECT_EQ(labels_of_batch_speakers(batch, named), (std::vector<int>{0, 1}));
  EXPECT_EQ(named.speaker_count, 2U);

  // Live 1 has no batch turns under it; live 0 and 2 match: live 2's label is past the count,
  // so the batch speaker over it takes the free label 1.
  const std::vector<Turn> gap{turn(0, 5, 0), turn(5, 6, 1), turn(6, 12, 2)};
  const auto two = batch_of({turn(0, 5, 0), turn(6, 12, 1)}, 2);
  EXPECT_EQ(labels_of_batch_speakers(two, under_live_names(gap, two)), (std::vector<int>{0, 1}));

  // Three batch speakers: live 2 keeps its label, live 1 (no batch turns) is dropped, and its
  // label goes to the unmatched batch speaker.
  const auto three = batch_of({turn(0, 5, 0), turn(6, 12, 1), turn(13, 14, 2)}, 3);
  EXPECT_EQ(labels_of_batch_speakers(three, under_live_names(gap, three)),
            (std::vector<int>{0, 2, 1}));
}

TEST(UnderLiveNames, NoLiveTurnsKeepTheBatchNumbers) {
  const auto batch = batch_of({turn(0, 4, 0), turn(5, 10, 1)}, 2);
  EXPECT_EQ(labels_of_batch_speakers(batch, under_live_names({}, batch)), (std::vector<int>{0, 1}));
  const auto empty = under_live_names({}, batch_of({}, 0));
  EXPECT_EQ(empty.speaker_count, 0U);
  EXPECT_TRUE(empty.turns.empty());
}

}  // namespace
}  // namespace parley::stream
