#include "cluster/inactive_speakers.h"

#include <gtest/gtest.h>

#include <cmath>

#include "cluster/assignment.h"
#include "core/error.h"

namespace parley::cluster {
namespace {

TEST(InactiveSpeakers, MasksSpeakersWithoutAnActiveFrame) {
  NdArray<float> binarized({2, 3, 2}, {1, 0, 0, 0, 1, 0,  //
                                       0, 0, 0, 0, 0, 0});
  const NdArray<int> clusters({2, 2}, {0, 1, 1, 0});
  EXPECT_EQ(inactive_speakers(binarized), (std::vector<bool>{false, true, true, true}));
  EXPECT_EQ(mask_inactive_speakers(binarized, clusters).values(),
            (std::vector<int>{0, kInactiveSpeaker, kInactiveSpeaker, kInactiveSpeaker}));
  EXPECT_THROW(mask_inactive_speakers(binarized, NdArray<int>({2, 3})), Error);
  EXPECT_THROW(inactive_speakers(NdArray<float>({2, 3})), Error);
}

// Off binarized input, the two rules the project used to have disagree: "no non-zero frame"
// calls a speaker whose activations are 1 and -1 active; pyannote calls it inactive, because
// both SpeakerDiarization.apply (`np.sum(binarized_segmentations.data, axis=1) == 0`) and
// BaseClustering.assign_embeddings (`segmentations.data.sum(1) == 0`) test the sum. We keep
// pyannote's. A NaN activation makes the sum NaN, which is not 0: active, under either rule.
TEST(InactiveSpeakers, FollowPyannotesSumRuleOffBinarizedInput) {
  const float nan = std::nanf("");
  // One chunk, two frames; speakers: cancelling activations, a NaN, silence, a negative one.
  NdArray<float> segmentations({1, 2, 4}, {1.0f, nan, 0.0f, -0.5f,  //
                                           -1.0f, 0.0f, 0.0f, 0.0f});
  EXPECT_EQ(inactive_speakers(segmentations), (std::vector<bool>{true, false, true, false}));
  EXPECT_EQ(mask_inactive_speakers(segmentations, NdArray<int>({1, 4}, {0, 1, 2, 3})).values(),
            (std::vector<int>{kInactiveSpeaker, 1, kInactiveSpeaker, 3}));
  // Summed in float32 in frame order, as numpy reduces axis 1: 1e8 + 1 rounds back to 1e8, so
  // the three frames sum to exactly 0.
  NdArray<float> cancelling({1, 3, 1}, {1e8f, 1.0f, -1e8f});
  EXPECT_EQ(inactive_speakers(cancelling), (std::vector<bool>{true}));
}

// The clustering's constrained assignment reads the same rule: the speaker whose activations
// cancel scores below everyone, so the active speaker gets the cluster both prefer.
TEST(InactiveSpeakers, AreWhatTheConstrainedAssignmentPutsLast) {
  NdArray<double> soft({1, 2, 2}, {0.9, 0.1, 0.8, 0.7});
  NdArray<float> segmentations({1, 2, 2}, {1.0f, 1.0f,  //
                                           -1.0f, 0.0f});
  EXPECT_EQ(assign_inactive_last(soft, segmentations).values(), (std::vector<int>{1, 0}));
  EXPECT_DOUBLE_EQ(soft(0), 0.1 - 1.0);
}

}  // namespace
}  // namespace parley::cluster
