#include "runtime/shape_plan.h"

#include <gtest/gtest.h>

#include <string>

#include "core/error.h"

namespace parley::runtime {
namespace {

NdArray<float> iota_array(std::vector<std::size_t> shape) {
  NdArray<float> array(std::move(shape));
  for (std::size_t i = 0; i < array.size(); ++i) array(i) = static_cast<float>(i + 1);
  return array;
}

TEST(Buckets, SortsDeduplicatesAndFits) {
  Buckets buckets({8, 1, 4, 4, 2});
  EXPECT_EQ(buckets.sizes(), (std::vector<std::size_t>{1, 2, 4, 8}));
  EXPECT_EQ(buckets.fit(1), 1u);
  EXPECT_EQ(buckets.fit(3), 4u);
  EXPECT_EQ(buckets.fit(8), 8u);
  EXPECT_THROW(buckets.fit(9), Error);
  EXPECT_EQ(Buckets::parse("1, 2,4,8"), buckets);
  EXPECT_EQ(Buckets::powers_of_two(12).sizes(), (std::vector<std::size_t>{1, 2, 4, 8, 12}));
  EXPECT_EQ(buckets.capped(5).sizes(), (std::vector<std::size_t>{1, 2, 4}));
  EXPECT_EQ(buckets.capped(0).sizes(), (std::vector<std::size_t>{1}));
  EXPECT_THROW(Buckets::parse("1,x"), Error);
  EXPECT_THROW(Buckets::parse("0,2"), Error);
  EXPECT_THROW(Buckets(std::vector<std::size_t>{}), Error);
}

TEST(PlanBatches, FullBatchesThenPaddedTail) {
  const Buckets buckets({1, 2, 4, 8});
  const auto plan = plan_batches(19, buckets);
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(plan[0], (BatchSlice{0, 8, 8}));
  EXPECT_EQ(plan[1], (BatchSlice{8, 8, 8}));
  EXPECT_EQ(plan[2], (BatchSlice{16, 3, 4}));
  EXPECT_EQ(padded_items(plan), 20u);
  EXPECT_TRUE(plan_batches(0, buckets).empty());
  EXPECT_EQ(plan_batches(5, buckets, 4), (std::vector<BatchSlice>{{0, 4, 4}, {4, 1, 1}}));
  // Every planned call has a bucket size: a static-shape provider compiles only these.
  for (std::size_t items = 1; items < 70; ++items) {
    std::size_t covered = 0;
    for (const auto& slice : plan_batches(items, buckets)) {
      EXPECT_TRUE(buckets.contains(slice.bucket));
      EXPECT_EQ(slice.offset, covered);
      covered += slice.count;
    }
    EXPECT_EQ(covered, items);
  }
}

TEST(Padding, PadAndTruncateRoundTrip) {
  const auto array = iota_array({2, 3, 2});
  const auto padded = pad_axis(array, 1, 5);
  EXPECT_EQ(padded.shape(), (std::vector<std::size_t>{2, 5, 2}));
  EXPECT_EQ(padded(0, 2, 1), array(0, 2, 1));
  EXPECT_EQ(padded(1, 0, 0), array(1, 0, 0));
  EXPECT_EQ(padded(0, 4, 1), 0.f);
  EXPECT_EQ(truncate_axis(padded, 1, 3).values(), array.values());
  const auto edge = pad_axis(array, 1, 4, PadMode::kEdge);
  EXPECT_EQ(edge(1, 3, 0), array(1, 2, 0));
  EXPECT_EQ(edge(1, 3, 1), array(1, 2, 1));
  EXPECT_THROW(pad_axis(array, 1, 2), Error);
  EXPECT_THROW(pad_axis(array, 3, 9), Error);
  EXPECT_THROW(truncate_axis(array, 0, 3), Error);
}

TEST(Padding, GatherScatterRoundTripOverAPlan) {
  const auto items = iota_array({11, 3});
  NdArray<float> outputs({11, 3}, -1.f);
  for (const auto& slice : plan_batches(11, Buckets({1, 2, 4}))) {
    const auto batch = gather_batch(items, slice);
    ASSERT_EQ(batch.dim(0), slice.bucket);
    for (std::size_t row = slice.count; row < slice.bucket; ++row) {
      for (std::size_t column = 0; column < 3; ++column) EXPECT_EQ(batch(row, column), 0.f);
    }
    scatter_batch(batch, slice, outputs, "model.onnx");
  }
  EXPECT_EQ(outputs.values(), items.values());
  EXPECT_THROW(gather_batch(items, {10, 2, 2}), Error);
  // A model whose output shape changes with the batch fails naming the model file.
  NdArray<float> wrong({4, 2});
  try {
    scatter_batch(wrong, {0, 3, 4}, outputs, "damaged.onnx");
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()),
              "damaged.onnx: returned [4,2] for one batch and [11,3] for another; the model's "
              "output shape must not change with the batch");
  }
  try {
    scatter_batch(NdArray<float>({2, 3}), {0, 3, 4}, outputs, "damaged.onnx");
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_TRUE(std::string(error.what()).starts_with("damaged.onnx: returned a batch of 2 for 4"))
        << error.what();
  }
}

TEST(Shapes, StringRoundTrip) {
  const std::vector<InputShape> shapes = {{"waveform", {1, 1, 160000}}, {"mask", {1, 589}}};
  EXPECT_EQ(shapes_to_string(shapes), "waveform:1x1x160000;mask:1x589");
  EXPECT_EQ(parse_shapes(shapes_to_string(shapes)), shapes);
  EXPECT_THROW(parse_shapes("waveform"), Error);
  EXPECT_THROW(parse_shapes("w:1xq"), Error);
}

TEST(Shapes, EnumerateBucketShapes) {
  ShapeProfile profile;
  profile.batch = Buckets({1, 4});
  profile.dim_buckets.emplace("frames", Buckets({200, 998}));
  const std::vector<DeclaredInput> inputs = {{"fbank", {-1, -1, 80}, {"batch", "frames", ""}}};
  const auto shapes = enumerate_bucket_shapes(inputs, profile);
  ASSERT_EQ(shapes.size(), 4u);
  EXPECT_EQ(shapes_to_string(shapes[0]), "fbank:1x200x80");
  EXPECT_EQ(shapes_to_string(shapes[1]), "fbank:1x998x80");
  EXPECT_EQ(shapes_to_string(shapes[3]), "fbank:4x998x80");

  const std::vector<DeclaredInput> fixed = {{"waveform", {1, 1, 160000}, {}}};
  ASSERT_EQ(enumerate_bucket_shapes(fixed, profile).size(), 1u);

  const std::vector<DeclaredInput> unnamed = {{"waveform", {-1, 1, -1}, {"", "", ""}}};
  try {
    enumerate_bucket_shapes(unnamed, profile);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("add waveform.2=SIZES to dim_buckets"),
              std::string::npos)
        << error.what();
  }
  profile.dim_buckets.emplace("waveform.2", Buckets({160000}));
  const auto by_position = enumerate_bucket_shapes(unnamed, profile);
  ASSERT_EQ(by_position.size(), 2u);
  EXPECT_EQ(shapes_to_string(by_position[1]), "waveform:4x1x160000");
}

TEST(Shapes, DimensionOverridesPinNamedDynamicAxes) {
  const std::vector<DeclaredInput> inputs = {
      {"features", {-1, -1, 80}, {"B", "frames", ""}},
      {"weights", {-1, -1, -1}, {"B", "pairs", ""}},
  };
  const std::vector<InputShape> shapes = {{"weights", {1, 768, 3346}},
                                          {"features", {1, 26768, 80}}};
  EXPECT_EQ(dimension_overrides(inputs, shapes),
            (std::map<std::string, std::int64_t>{{"B", 1}, {"frames", 26768}, {"pairs", 768}}));
  EXPECT_THROW(dimension_overrides(inputs, {shapes[0]}), Error);  // no shape for "features"
  const std::vector<InputShape> clashing = {{"features", {1, 998, 80}}, {"weights", {2, 3, 125}}};
  EXPECT_THROW(dimension_overrides(inputs, clashing), Error);  // B both 1 and 2
}

}  // namespace
}  // namespace parley::runtime
