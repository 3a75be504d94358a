#include "stages/segmentation_feed.h"

#include <algorithm>
#include <utility>

#include "core/error.h"

namespace parley::pipeline {

void ScoreKeepingFeed::take_scores(std::size_t first_chunk, NdArray<float> log_probabilities) {
  if (log_probabilities.rank() != 3 || first_chunk != chunks_ ||
      (!calls_.empty() && (log_probabilities.dim(1) != calls_.front().dim(1) ||
                           log_probabilities.dim(2) != calls_.front().dim(2)))) {
    fail("segmentation scores: a call's scores from chunk {} do not continue the {} chunk(s) kept",
         first_chunk, chunks_);
  }
  chunks_ += log_probabilities.dim(0);
  calls_.push_back(std::move(log_probabilities));
}

NdArray<float> ScoreKeepingFeed::take_all() {
  std::vector<NdArray<float>> calls = std::exchange(calls_, {});
  const std::size_t chunks = std::exchange(chunks_, 0);
  if (calls.empty()) return NdArray<float>({0, 0, 0});
  if (calls.size() == 1) return std::move(calls.front());
  NdArray<float> joined({chunks, calls.front().dim(1), calls.front().dim(2)});
  float* target = joined.data();
  for (const auto& call : calls) target = std::copy_n(call.data(), call.size(), target);
  return joined;
}

}  // namespace parley::pipeline
