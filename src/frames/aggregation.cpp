#include "frames/aggregation.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <numeric>

#include "core/error.h"

namespace parley::frames {

namespace {

std::int64_t round_half_even(double value) {
  return static_cast<std::int64_t>(std::nearbyint(value));
}

}  // namespace

std::vector<double> hamming_window(std::size_t length) {
  if (length == 0) {
    return {};
  }
  if (length == 1) {
    return {1.0};
  }
  std::vector<double> window(length);
  const auto denominator = static_cast<double>(length - 1);
  for (std::size_t i = 0; i < length; ++i) {
    // numpy: n = arange(1 - M, M, 2); 0.54 + 0.46 * cos(pi * n / (M - 1))
    const double n = 1.0 - static_cast<double>(length) + 2.0 * static_cast<double>(i);
    window[i] = 0.54 + 0.46 * std::cos(std::numbers::pi * n / denominator);
  }
  return window;
}

std::int64_t chunk_start_frame(double chunk_start, const SlidingWindow& frames) {
  return frames.closest_frame(chunk_start + 0.5 * frames.duration());
}

std::int64_t aggregated_frame_count(std::int64_t num_chunks, const SlidingWindow& chunks,
                                    const SlidingWindow& frames) {
  const SlidingWindow output(chunks.start(), frames.duration(), frames.step());
  const double last_chunk_end =
      chunks.start() + chunks.duration() + static_cast<double>(num_chunks - 1) * chunks.step();
  return std::max<std::int64_t>(output.closest_frame(last_chunk_end + 0.5 * output.duration()) + 1,
                                0);
}

ChunkAggregator::ChunkAggregator(std::size_t num_chunks, std::size_t frames_per_chunk,
                                 std::size_t num_classes, const SlidingWindow& chunks,
                                 const SlidingWindow& frames, const AggregateOptions& options)
    : num_chunks_(num_chunks),
      frames_per_chunk_(frames_per_chunk),
      num_classes_(num_classes),
      chunks_(chunks),
      output_frames_(chunks.start(), frames.duration(), frames.step()),
      options_(options),
      hamming_(options.hamming ? hamming_window(frames_per_chunk)
                               : std::vector<double>(frames_per_chunk, 1.0)),
      warm_up_(frames_per_chunk, 1.0),
      all_classes_(num_classes),
      frame_count_(static_cast<std::size_t>(
          aggregated_frame_count(static_cast<std::int64_t>(num_chunks), chunks, frames))),
      sum_({frame_count_, num_classes}),
      weight_({frame_count_, num_classes}),
      covered_(frame_count_ * num_classes, false) {
  std::iota(all_classes_.begin(), all_classes_.end(), std::size_t{0});
  const auto per_chunk = static_cast<double>(frames_per_chunk);
  const std::int64_t warm_up_left =
      round_half_even(options.warm_up.first / chunks.duration() * per_chunk);
  const std::int64_t warm_up_right =
      round_half_even(options.warm_up.second / chunks.duration() * per_chunk);
  for (std::int64_t f = 0; f < static_cast<std::int64_t>(frames_per_chunk); ++f) {
    if (f < warm_up_left || f >= static_cast<std::int64_t>(frames_per_chunk) - warm_up_right) {
      warm_up_[static_cast<std::size_t>(f)] = options.epsilon;
    }
  }
}

void ChunkAggregator::add(std::size_t chunk, std::span<const double> scores) {
  add(chunk, scores, all_classes_);
}

void ChunkAggregator::add(std::size_t chunk, std::span<const double> scores,
                          std::span<const std::size_t> classes) {
  if (chunk >= num_chunks_ || scores.size() != frames_per_chunk_ * num_classes_) {
    fail("aggregation: chunk {} with {} scores does not fit {} chunks of {} frames x {} classes",
         chunk, scores.size(), num_chunks_, frames_per_chunk_, num_classes_);
  }
  const auto num_frames = static_cast<std::int64_t>(frame_count_);
  const std::int64_t start_frame =
      chunk_start_frame(chunks_[static_cast<std::int64_t>(chunk)].start, output_frames_);
  if (start_frame < 0 || start_frame + static_cast<std::int64_t>(frames_per_chunk_) > num_frames) {
    fail(
        "aggregation: chunk {} (frames {}..{}) falls outside the {} output frames; the frames "
        "window does not match the chunk length",
        chunk, start_frame, start_frame + static_cast<std::int64_t>(frames_per_chunk_), num_frames);
  }
  for (std::size_t f = 0; f < frames_per_chunk_; ++f) {
    const std::size_t row = static_cast<std::size_t>(start_frame) + f;
    for (const std::size_t k : classes) {
      const double value = scores[f * num_classes_ + k];
      if (std::isnan(value)) {
        continue;  // mask 0: contributes nothing and does not mark the frame as covered
      }
      const double contribution = value * hamming_[f] * warm_up_[f];
      const double chunk_weight = hamming_[f] * warm_up_[f];
      sum_(row, k) = static_cast<float>(static_cast<double>(sum_(row, k)) + contribution);
      weight_(row, k) = static_cast<float>(static_cast<double>(weight_(row, k)) + chunk_weight);
      covered_[row * num_classes_ + k] = true;
    }
  }
}

SlidingWindowFeature<float> ChunkAggregator::result() const {
  const auto epsilon = static_cast<float>(options_.epsilon);
  NdArray<float> average({frame_count_, num_classes_});
  for (std::size_t i = 0; i < average.size(); ++i) {
    if (!covered_[i]) {
      average(i) = options_.missing;
    } else if (options_.skip_average) {
      average(i) = sum_(i);
    } else {
      average(i) = sum_(i) / std::max(weight_(i), epsilon);
    }
  }
  return {std::move(average), output_frames_};
}

template <typename T>
SlidingWindowFeature<float> aggregate(const NdArray<T>& scores, const SlidingWindow& chunks,
                                      const SlidingWindow& frames,
                                      const AggregateOptions& options) {
  if (scores.rank() != 3) {
    fail("aggregation: scores must be [chunks, frames, classes] (got {} dimensions)",
         scores.rank());
  }
  ChunkAggregator aggregator(scores.dim(0), scores.dim(1), scores.dim(2), chunks, frames, options);
  const std::size_t chunk_size = scores.dim(1) * scores.dim(2);
  std::vector<double> chunk_scores(chunk_size);
  for (std::size_t c = 0; c < scores.dim(0); ++c) {
    std::copy_n(scores.data() + c * chunk_size, chunk_size, chunk_scores.begin());
    aggregator.add(c, chunk_scores);
  }
  return aggregator.result();
}

template SlidingWindowFeature<float> aggregate<float>(const NdArray<float>&, const SlidingWindow&,
                                                      const SlidingWindow&,
                                                      const AggregateOptions&);
template SlidingWindowFeature<float> aggregate<double>(const NdArray<double>&, const SlidingWindow&,
                                                       const SlidingWindow&,
                                                       const AggregateOptions&);

SlidingWindowFeature<float> trim(const SlidingWindowFeature<float>& chunk_scores,
                                 std::pair<double, double> warm_up) {
  const NdArray<float>& data = chunk_scores.data;
  if (data.rank() != 3) {
    fail("trim: scores must be [chunks, frames, classes] (got {} dimensions)", data.rank());
  }
  const std::size_t num_chunks = data.dim(0);
  const std::size_t num_classes = data.dim(2);
  const TrimmedFrames kept = trimmed_frames(data.dim(1), chunk_scores.window, warm_up);
  NdArray<float> trimmed({num_chunks, kept.count, num_classes});
  for (std::size_t c = 0; c < num_chunks; ++c) {
    for (std::size_t f = 0; f < kept.count; ++f) {
      for (std::size_t k = 0; k < num_classes; ++k) {
        trimmed(c, f, k) = data(c, f + kept.first, k);
      }
    }
  }
  return {std::move(trimmed), kept.chunks};
}

TrimmedFrames trimmed_frames(std::size_t frames_per_chunk, const SlidingWindow& chunks,
                             std::pair<double, double> warm_up) {
  const auto frames = static_cast<double>(frames_per_chunk);
  const std::int64_t left = round_half_even(frames * warm_up.first);
  const std::int64_t right = round_half_even(frames * warm_up.second);
  const std::int64_t kept = static_cast<std::int64_t>(frames_per_chunk) - left - right;
  if (left < 0 || right < 0 || kept <= 0) {
    fail("trim: warm-up ({}, {}) leaves no frame of the {}-frame chunks", warm_up.first,
         warm_up.second, frames_per_chunk);
  }
  return {static_cast<std::size_t>(left), static_cast<std::size_t>(kept),
          SlidingWindow(chunks.start() + warm_up.first * chunks.duration(),
                        (1.0 - warm_up.first - warm_up.second) * chunks.duration(), chunks.step())};
}

}  // namespace parley::frames
