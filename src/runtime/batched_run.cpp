#include "runtime/batched_run.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"

namespace parley::runtime {

NdArray<float> run_batched(OnnxSession& session, const std::string& input,
                           const std::string& output, const NdArray<float>& items,
                           const std::vector<BatchSlice>& plan, PadMode mode) {
  NdArray<float> all_outputs;
  std::size_t covered = 0;
  for (const auto& slice : plan) {
    if (slice.offset != covered) {
      fail("run_batched: the plan skips or repeats items (call at {} after {} items)", slice.offset,
           covered);
    }
    covered += slice.count;
    const NdArray<float> batch = gather_batch(items, slice, mode);
    auto results = session.run({{input, &batch}}, {output});
    const NdArray<float>& result = results.at(0);
    if (result.rank() == 0 || result.dim(0) != slice.bucket) {
      fail("{}: output '{}' has shape [{}], expected the batch of {} on axis 0",
           session.model_path().string(), output, fmt::join(result.shape(), ","), slice.bucket);
    }
    if (all_outputs.rank() == 0) {
      std::vector<std::size_t> shape = result.shape();
      shape[0] = items.dim(0);
      all_outputs = NdArray<float>(shape);
    }
    scatter_batch(result, slice, all_outputs, session.model_path().string());
  }
  if (covered != (items.rank() == 0 ? 0 : items.dim(0))) {
    fail("run_batched: the plan covers {} of {} items", covered,
         items.rank() == 0 ? 0 : items.dim(0));
  }
  return all_outputs;
}

}  // namespace parley::runtime
