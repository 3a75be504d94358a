#include "runtime/shape_plan.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cstring>

#include "core/error.h"

namespace parley::runtime {
namespace {

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto end = text.find(separator, start);
    const auto stop = end == std::string_view::npos ? text.size() : end;
    parts.push_back(text.substr(start, stop - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return parts;
}

template <typename Integer>
bool parse_integer(std::string_view text, Integer& value) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  const auto* end = text.data() + text.size();
  auto [pointer, error] = std::from_chars(text.data(), end, value);
  return error == std::errc() && pointer == end && !text.empty();
}

// Size of one slice below `axis` (product of the dimensions after it) and the count of slices
// above it (product of the dimensions before it).
std::size_t inner_size(const std::vector<std::size_t>& shape, std::size_t axis) {
  std::size_t size = 1;
  for (std::size_t i = axis + 1; i < shape.size(); ++i) size *= shape[i];
  return size;
}
std::size_t outer_count(const std::vector<std::size_t>& shape, std::size_t axis) {
  std::size_t count = 1;
  for (std::size_t i = 0; i < axis; ++i) count *= shape[i];
  return count;
}

}  // namespace

Buckets::Buckets(std::vector<std::size_t> sizes) : sizes_(std::move(sizes)) {
  if (sizes_.empty()) fail("bucket list is empty; give at least one size (e.g. 1,2,4,8)");
  std::sort(sizes_.begin(), sizes_.end());
  sizes_.erase(std::unique(sizes_.begin(), sizes_.end()), sizes_.end());
  if (sizes_.front() == 0) fail("bucket sizes must be positive (got 0 in {})", to_string());
}

Buckets Buckets::powers_of_two(std::size_t largest) {
  if (largest == 0) fail("the largest bucket must be positive");
  std::vector<std::size_t> sizes;
  for (std::size_t size = 1; size < largest; size *= 2) sizes.push_back(size);
  sizes.push_back(largest);
  return Buckets(std::move(sizes));
}

Buckets Buckets::parse(std::string_view text) {
  std::vector<std::size_t> sizes;
  for (auto part : split(text, ',')) {
    std::size_t size = 0;
    if (!parse_integer(part, size) || size == 0) {
      fail("bucket list '{}': '{}' is not a positive integer (expected e.g. 1,2,4,8)", text, part);
    }
    sizes.push_back(size);
  }
  return Buckets(std::move(sizes));
}

bool Buckets::contains(std::size_t size) const {
  return std::binary_search(sizes_.begin(), sizes_.end(), size);
}

std::size_t Buckets::fit(std::size_t count) const {
  auto it = std::lower_bound(sizes_.begin(), sizes_.end(), count);
  if (it == sizes_.end()) {
    fail("{} items do not fit the largest bucket ({}); split them with plan_batches", count,
         largest());
  }
  return *it;
}

Buckets Buckets::capped(std::size_t limit) const {
  std::vector<std::size_t> kept;
  for (auto size : sizes_) {
    if (size <= limit) kept.push_back(size);
  }
  if (kept.empty()) kept.push_back(sizes_.front());
  return Buckets(std::move(kept));
}

std::string Buckets::to_string() const { return fmt::format("{}", fmt::join(sizes_, ",")); }

Buckets default_batch_buckets() { return Buckets({1, 2, 4, 8, 16, 32}); }

std::vector<BatchSlice> plan_batches(std::size_t items, const Buckets& buckets,
                                     std::size_t max_batch) {
  const Buckets usable = buckets.capped(max_batch);
  std::vector<BatchSlice> plan;
  std::size_t offset = 0;
  while (items - offset >= usable.largest()) {
    plan.push_back({offset, usable.largest(), usable.largest()});
    offset += usable.largest();
  }
  if (offset < items) {
    const std::size_t tail = items - offset;
    plan.push_back({offset, tail, usable.fit(tail)});
  }
  return plan;
}

std::size_t padded_items(const std::vector<BatchSlice>& plan) {
  std::size_t total = 0;
  for (const auto& slice : plan) total += slice.bucket;
  return total;
}

NdArray<float> pad_axis(const NdArray<float>& array, std::size_t axis, std::size_t target,
                        PadMode mode) {
  if (axis >= array.rank()) {
    fail("pad_axis: axis {} is out of range for a rank-{} array", axis, array.rank());
  }
  const std::size_t current = array.dim(axis);
  if (target < current) {
    fail("pad_axis: cannot pad axis {} from {} down to {}", axis, current, target);
  }
  if (mode == PadMode::kEdge && current == 0 && target > 0) {
    fail("pad_axis: edge padding needs at least one real entry on axis {}", axis);
  }
  std::vector<std::size_t> shape = array.shape();
  shape[axis] = target;
  NdArray<float> padded(shape, 0.f);
  const std::size_t inner = inner_size(shape, axis);
  const std::size_t outer = outer_count(shape, axis);
  for (std::size_t o = 0; o < outer; ++o) {
    const float* source = array.data() + o * current * inner;
    float* destination = padded.data() + o * target * inner;
    if (current > 0) std::memcpy(destination, source, current * inner * sizeof(float));
    if (mode == PadMode::kEdge) {
      const float* last = source + (current - 1) * inner;
      for (std::size_t i = current; i < target; ++i) {
        std::memcpy(destination + i * inner, last, inner * sizeof(float));
      }
    }
  }
  return padded;
}

NdArray<float> truncate_axis(const NdArray<float>& array, std::size_t axis, std::size_t keep) {
  if (axis >= array.rank()) {
    fail("truncate_axis: axis {} is out of range for a rank-{} array", axis, array.rank());
  }
  const std::size_t current = array.dim(axis);
  if (keep > current) {
    fail("truncate_axis: cannot keep {} entries of axis {} that has {}", keep, axis, current);
  }
  std::vector<std::size_t> shape = array.shape();
  shape[axis] = keep;
  NdArray<float> kept(shape);
  const std::size_t inner = inner_size(shape, axis);
  const std::size_t outer = outer_count(shape, axis);
  for (std::size_t o = 0; o < outer; ++o) {
    if (keep == 0 || inner == 0) break;
    std::memcpy(kept.data() + o * keep * inner, array.data() + o * current * inner,
                keep * inner * sizeof(float));
  }
  return kept;
}

NdArray<float> gather_batch(const NdArray<float>& items, const BatchSlice& slice, PadMode mode) {
  if (items.rank() == 0) fail("gather_batch: items need a batch axis");
  if (slice.count == 0 || slice.offset + slice.count > items.dim(0) || slice.bucket < slice.count) {
    fail("gather_batch: slice (offset {}, count {}, bucket {}) does not fit {} items", slice.offset,
         slice.count, slice.bucket, items.dim(0));
  }
  std::vector<std::size_t> shape = items.shape();
  shape[0] = slice.count;
  const std::size_t row = inner_size(items.shape(), 0);
  NdArray<float> real(shape);
  std::memcpy(real.data(), items.data() + slice.offset * row, slice.count * row * sizeof(float));
  return pad_axis(real, 0, slice.bucket, mode);
}

void scatter_batch(const NdArray<float>& batch_output, const BatchSlice& slice,
                   NdArray<float>& all_outputs, std::string_view model) {
  if (batch_output.rank() == 0 || batch_output.dim(0) != slice.bucket) {
    fail("{}: returned a batch of {} for {} inputs; the model is damaged or not the one expected",
         model, batch_output.rank() == 0 ? 0 : batch_output.dim(0), slice.bucket);
  }
  if (all_outputs.rank() != batch_output.rank() ||
      !std::equal(batch_output.shape().begin() + 1, batch_output.shape().end(),
                  all_outputs.shape().begin() + 1)) {
    fail(
        "{}: returned [{}] for one batch and [{}] for another; the model's output shape must not "
        "change with the batch",
        model, fmt::join(batch_output.shape(), ","), fmt::join(all_outputs.shape(), ","));
  }
  if (slice.offset + slice.count > all_outputs.dim(0)) {
    fail("scatter_batch: rows {}..{} do not fit the {} of the outputs", slice.offset,
         slice.offset + slice.count, all_outputs.dim(0));
  }
  const std::size_t row = inner_size(batch_output.shape(), 0);
  std::memcpy(all_outputs.data() + slice.offset * row, batch_output.data(),
              slice.count * row * sizeof(float));
}

std::string shapes_to_string(const std::vector<InputShape>& shapes) {
  std::string text;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    if (i > 0) text += ';';
    text += fmt::format("{}:{}", shapes[i].name, fmt::join(shapes[i].dims, "x"));
  }
  return text;
}

std::vector<InputShape> parse_shapes(std::string_view text) {
  std::vector<InputShape> shapes;
  if (text.empty()) return shapes;
  for (auto part : split(text, ';')) {
    const auto colon = part.rfind(':');
    if (colon == std::string_view::npos || colon == 0) {
      fail("shape '{}': expected name:DIMxDIM (e.g. waveform:1x1x160000)", part);
    }
    InputShape shape{std::string(part.substr(0, colon)), {}};
    for (auto dim : split(part.substr(colon + 1), 'x')) {
      std::int64_t value = 0;
      if (!parse_integer(dim, value) || value < 0) {
        fail("shape '{}': '{}' is not a dimension size", part, dim);
      }
      shape.dims.push_back(value);
    }
    shapes.push_back(std::move(shape));
  }
  return shapes;
}

std::vector<std::vector<InputShape>> enumerate_bucket_shapes(
    const std::vector<DeclaredInput>& inputs, const ShapeProfile& profile) {
  // Each dynamic axis is a "slot" whose sizes vary; the batch slot is shared by all inputs, and
  // slots with the same symbol share their size too (so "frames" is the same everywhere).
  struct Slot {
    std::string key;
    std::vector<std::size_t> sizes;
  };
  std::vector<Slot> slots;
  auto slot_index = [&](const std::string& key, const Buckets& buckets) {
    for (std::size_t i = 0; i < slots.size(); ++i) {
      if (slots[i].key == key) return i;
    }
    slots.push_back({key, buckets.sizes()});
    return slots.size() - 1;
  };
  // For each input axis: the slot it reads from, or -1 when fixed.
  std::vector<std::vector<long>> axis_slots;
  for (const auto& input : inputs) {
    std::vector<long> slots_of_input;
    for (std::size_t axis = 0; axis < input.dims.size(); ++axis) {
      if (input.dims[axis] >= 0) {
        slots_of_input.push_back(-1);
        continue;
      }
      const std::string symbol = axis < input.symbols.size() ? input.symbols[axis] : "";
      const std::string by_position = fmt::format("{}.{}", input.name, axis);
      if (!symbol.empty() && profile.dim_buckets.count(symbol)) {
        slots_of_input.push_back(
            static_cast<long>(slot_index("sym:" + symbol, profile.dim_buckets.at(symbol))));
      } else if (profile.dim_buckets.count(by_position)) {
        slots_of_input.push_back(static_cast<long>(
            slot_index("pos:" + by_position, profile.dim_buckets.at(by_position))));
      } else if (axis == 0) {
        slots_of_input.push_back(static_cast<long>(slot_index("batch", profile.batch)));
      } else {
        fail(
            "input '{}' axis {}{} is dynamic and has no sizes; add {}=SIZES to dim_buckets "
            "(e.g. {}=998)",
            input.name, axis, symbol.empty() ? "" : fmt::format(" ('{}')", symbol),
            symbol.empty() ? by_position : symbol, symbol.empty() ? by_position : symbol);
      }
    }
    axis_slots.push_back(std::move(slots_of_input));
  }
  std::vector<std::vector<InputShape>> combinations;
  std::vector<std::size_t> choice(slots.size(), 0);
  while (true) {
    std::vector<InputShape> shapes;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      InputShape shape{inputs[i].name, inputs[i].dims};
      for (std::size_t axis = 0; axis < shape.dims.size(); ++axis) {
        const long slot = axis_slots[i][axis];
        if (slot >= 0) {
          const auto s = static_cast<std::size_t>(slot);
          shape.dims[axis] = static_cast<std::int64_t>(slots[s].sizes[choice[s]]);
        }
      }
      shapes.push_back(std::move(shape));
    }
    combinations.push_back(std::move(shapes));
    // Odometer over the slots, last slot fastest.
    std::size_t position = slots.size();
    while (position > 0) {
      --position;
      if (++choice[position] < slots[position].sizes.size()) break;
      choice[position] = 0;
      if (position == 0) return combinations;
    }
    if (slots.empty()) return combinations;
  }
}

std::map<std::string, std::int64_t> dimension_overrides(const std::vector<DeclaredInput>& inputs,
                                                        const std::vector<InputShape>& shapes) {
  std::map<std::string, std::int64_t> overrides;
  for (const auto& input : inputs) {
    const auto shape = std::find_if(shapes.begin(), shapes.end(), [&](const InputShape& given) {
      return given.name == input.name;
    });
    if (shape == shapes.end() || shape->dims.size() != input.dims.size()) {
      fail("no {}-dimensional shape given for input '{}' (shapes: {})", input.dims.size(),
           input.name, shapes_to_string(shapes));
    }
    for (std::size_t axis = 0; axis < input.dims.size(); ++axis) {
      if (input.dims[axis] >= 0 || axis >= input.symbols.size() || input.symbols[axis].empty()) {
        continue;
      }
      const auto [it, inserted] = overrides.emplace(input.symbols[axis], shape->dims[axis]);
      if (!inserted && it->second != shape->dims[axis]) {
        fail("dimension '{}' would be both {} and {} (shapes: {})", input.symbols[axis], it->second,
             shape->dims[axis], shapes_to_string(shapes));
      }
    }
  }
  return overrides;
}

}  // namespace parley::runtime
