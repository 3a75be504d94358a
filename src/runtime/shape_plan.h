#pragma once
// Shape planning for providers that compile one graph per input shape (MIGraphX, TensorRT,
// CoreML): dynamic dimensions are padded up to a few bucket sizes, so such a provider compiles a
// handful of graphs instead of one per batch size, and results are cut back to the real size.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/ndarray.h"

namespace parley::runtime {

// Sorted, distinct, positive sizes that one dimension is padded up to.
class Buckets {
 public:
  explicit Buckets(std::vector<std::size_t> sizes);
  // 1, 2, 4, ... up to and including `largest` (which need not be a power of two).
  static Buckets powers_of_two(std::size_t largest);
  // "1,2,4,8" (the format of --batch-buckets and of the cache key).
  static Buckets parse(std::string_view text);

  const std::vector<std::size_t>& sizes() const { return sizes_; }
  std::size_t largest() const { return sizes_.back(); }
  std::size_t smallest() const { return sizes_.front(); }
  bool contains(std::size_t size) const;
  // The smallest bucket that holds `count` items; throws when `count` exceeds the largest.
  std::size_t fit(std::size_t count) const;
  // Only the buckets not larger than `limit` (at least the smallest bucket is kept).
  Buckets capped(std::size_t limit) const;
  std::string to_string() const;

  bool operator==(const Buckets&) const = default;

 private:
  std::vector<std::size_t> sizes_;
};

// Default batch buckets: 1..32 in powers of two.
Buckets default_batch_buckets();

// One model call: items [offset, offset + count) of the whole job, padded to `bucket`.
struct BatchSlice {
  std::size_t offset = 0;
  std::size_t count = 0;
  std::size_t bucket = 0;

  std::size_t padding() const { return bucket - count; }
  bool operator==(const BatchSlice&) const = default;
};

// Splits `items` into calls whose sizes are buckets: full batches of the largest bucket not above
// `max_batch`, then the tail padded to the smallest bucket that holds it.
std::vector<BatchSlice> plan_batches(std::size_t items, const Buckets& buckets,
                                     std::size_t max_batch = SIZE_MAX);
// Total padded items of a plan (what the provider computes, padding included).
std::size_t padded_items(const std::vector<BatchSlice>& plan);

enum class PadMode {
  kZero,  // fill with zeros
  kEdge,  // repeat the last real slice (keeps normalisation statistics close to the real data)
};

// `array` with dimension `axis` grown to `target` (target >= current size).
NdArray<float> pad_axis(const NdArray<float>& array, std::size_t axis, std::size_t target,
                        PadMode mode = PadMode::kZero);
// The first `keep` entries along `axis`.
NdArray<float> truncate_axis(const NdArray<float>& array, std::size_t axis, std::size_t keep);

// Items [slice.offset, slice.offset + slice.count) of `items` (axis 0) as a batch of
// slice.bucket, padded with `mode`.
NdArray<float> gather_batch(const NdArray<float>& items, const BatchSlice& slice,
                            PadMode mode = PadMode::kZero);
// Copies the first slice.count rows of `batch_output` into rows slice.offset... of `all_outputs`,
// dropping the padding; `all_outputs` must already have the full shape. An output of another
// shape fails naming `model`, the file that returned it.
void scatter_batch(const NdArray<float>& batch_output, const BatchSlice& slice,
                   NdArray<float>& all_outputs, std::string_view model);

// A concrete input shape of one model call; the cache key and free-dimension overrides use it.
struct InputShape {
  std::string name;
  std::vector<std::int64_t> dims;

  bool operator==(const InputShape&) const = default;
};
// "waveform:1x1x160000;mask:1x589" (inputs in the given order).
std::string shapes_to_string(const std::vector<InputShape>& shapes);
std::vector<InputShape> parse_shapes(std::string_view text);

// A model input as the model declares it: -1 marks a dynamic dimension, `symbols` holds the
// dimension names ("batch", "frames"; empty when unnamed).
struct DeclaredInput {
  std::string name;
  std::vector<std::int64_t> dims;
  std::vector<std::string> symbols;
};

// How to fill dynamic dimensions: a dynamic first dimension is the batch; any other dynamic
// dimension takes its sizes from `dim_buckets`, looked up by symbol ("frames") or by
// "input.axis" ("fbank.1").
struct ShapeProfile {
  Buckets batch = default_batch_buckets();
  std::map<std::string, Buckets> dim_buckets;
};

// Every combination of bucket sizes for the model's inputs; throws naming the input, axis and
// flag when a dynamic dimension has no sizes.
std::vector<std::vector<InputShape>> enumerate_bucket_shapes(
    const std::vector<DeclaredInput>& inputs, const ShapeProfile& profile);

// The free-dimension overrides that pin each named dynamic dimension of `inputs` to its size in
// `shapes` (matched by input name): what a session for one static shape needs besides the shapes.
// Fails when an input has no shape, or when one symbol would get two sizes.
std::map<std::string, std::int64_t> dimension_overrides(const std::vector<DeclaredInput>& inputs,
                                                        const std::vector<InputShape>& shapes);

}  // namespace parley::runtime
