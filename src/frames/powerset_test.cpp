#include "frames/powerset.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "core/npz.h"
#include "testing/shared_data.h"

namespace parley::frames {
namespace {

TEST(Powerset, OrdersClassesBySizeThenLexicographically) {
  const Powerset powerset(3, 2);
  ASSERT_EQ(powerset.num_powerset_classes(), 7);
  const std::vector<std::vector<int>> expected = {{}, {0}, {1}, {2}, {0, 1}, {0, 2}, {1, 2}};
  EXPECT_EQ(powerset.sets(), expected);
  EXPECT_EQ(Powerset(4, 4).num_powerset_classes(), 16);
  EXPECT_EQ(Powerset(4, 2).num_powerset_classes(), 11);
  EXPECT_THROW(Powerset(2, 3), Error);
  EXPECT_THROW(Powerset(0, 0), Error);
}

TEST(Powerset, MappingsMatchPyannoteForEverySize) {
  PARLEY_REQUIRE_SHARED(dir, "goldens/speakrs");
  int checked = 0;
  for (int classes = 2; classes <= 4; ++classes) {
    for (int max_set = 1; max_set <= classes; ++max_set) {
      const auto path = dir / ("powerset_mapping_" + std::to_string(classes) + "_" +
                               std::to_string(max_set) + ".npy");
      const NdArray<float> expected = read_npy(path).as<float>();
      const NdArray<float> mapping = Powerset(classes, max_set).mapping();
      EXPECT_EQ(mapping.shape(), expected.shape()) << path;
      EXPECT_EQ(mapping.values(), expected.values()) << path;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 9);
}

TEST(Powerset, HardDecodingMatchesPyannote) {
  PARLEY_REQUIRE_SHARED(dir, "goldens/speakrs");
  const NdArray<float> logits = read_npy(dir / "powerset_input_logits.npy").as<float>();
  const NdArray<float> expected = read_npy(dir / "powerset_hard_output.npy").as<float>();
  ASSERT_EQ(logits.shape(), (std::vector<std::size_t>{1, 589, 7}));
  const NdArray<float> decoded = Powerset(3, 2).to_multilabel(logits);
  EXPECT_EQ(decoded.shape(), expected.shape());
  EXPECT_EQ(decoded.values(), expected.values());
}

TEST(Powerset, HardDecodingTakesFirstMaximumAndNaN) {
  const Powerset powerset(3, 2);
  // frame 0: tie between {1} and {0,2} -> {1}; frame 1: NaN wins as torch.argmax; frame 2: {1,2}
  const float nan = std::nanf("");
  NdArray<float> scores({3, 7}, {0, 1, 3,   0, 0, 3, 0,  //
                                 0, 1, nan, 5, 0, 0, 0,  //
                                 0, 0, 0,   0, 0, 0, 0.5f});
  const NdArray<float> decoded = powerset.to_multilabel(scores);
  EXPECT_EQ(decoded.shape(), (std::vector<std::size_t>{3, 3}));
  EXPECT_EQ(decoded.values(), (std::vector<float>{0, 1, 0, 0, 1, 0, 0, 1, 1}));
  EXPECT_THROW(powerset.to_multilabel(NdArray<float>({2, 6})), Error);
}

TEST(Powerset, CompactDecodingKeepsOneClassPerFrame) {
  const Powerset powerset(3, 2);
  const float nan = std::nanf("");
  NdArray<float> scores({2, 2, 7}, {0, 1, 3, 0, 0, 3, 0,    0, 1, nan, 5, 0, 0, 0,  //
                                    0, 0, 0, 0, 0, 0, 0.5f, 9, 0, 0,   0, 0, 0, 0});
  const std::vector<std::uint8_t> classes = powerset.decode(scores);
  EXPECT_EQ(classes, (std::vector<std::uint8_t>{2, 2, 6, 0}));
  // Stale values in the output are overwritten, not added to.
  std::vector<float> activations(12, 7.0f);
  powerset.write_multilabel(classes, activations);
  EXPECT_EQ(activations, powerset.to_multilabel(scores).values());
  std::vector<float> too_short(11);
  EXPECT_THROW(powerset.write_multilabel(classes, too_short), Error);
  const std::vector<std::uint8_t> unknown = {7};
  std::vector<float> three(3);
  EXPECT_THROW(powerset.write_multilabel(unknown, three), Error);
}

TEST(Powerset, MoreClassesThanAByteStillDecodeToMultilabel) {
  const Powerset large(9, 5);  // 382 sets
  ASSERT_GT(large.num_powerset_classes(), 256);
  NdArray<float> scores({1, static_cast<std::size_t>(large.num_powerset_classes())});
  scores(300) = 1.0f;
  const NdArray<float> decoded = large.to_multilabel(scores);
  float active = 0.0f;
  for (const float value : decoded.values()) active += value;
  EXPECT_EQ(active, static_cast<float>(large.sets()[300].size()));
  EXPECT_THROW(large.decode(scores), Error);
}

TEST(Powerset, SoftDecodingSumsProbabilitiesOfSetsContainingEachClass) {
  const Powerset powerset(3, 2);
  const std::vector<float> probabilities = {0.1f, 0.2f, 0.05f, 0.05f, 0.3f, 0.2f, 0.1f};
  NdArray<float> log_probs({1, 7});
  for (std::size_t i = 0; i < 7; ++i) log_probs(i) = std::log(probabilities[i]);
  const NdArray<float> soft = powerset.to_multilabel_soft(log_probs);
  EXPECT_NEAR(soft(0), 0.2f + 0.3f + 0.2f, 1e-6);   // {0}, {0,1}, {0,2}
  EXPECT_NEAR(soft(1), 0.05f + 0.3f + 0.1f, 1e-6);  // {1}, {0,1}, {1,2}
  EXPECT_NEAR(soft(2), 0.05f + 0.2f + 0.1f, 1e-6);  // {2}, {0,2}, {1,2}
}

TEST(Powerset, ToPowersetInvertsHardMultilabel) {
  const Powerset powerset(3, 2);
  for (int set = 0; set < powerset.num_powerset_classes(); ++set) {
    NdArray<float> one_hot({1, 7});
    one_hot(static_cast<std::size_t>(set)) = 1.0f;
    const NdArray<float> multilabel = powerset.to_multilabel(one_hot);
    EXPECT_EQ(powerset.to_powerset(multilabel).values(), one_hot.values()) << set;
  }
}

}  // namespace
}  // namespace parley::frames
