#include "stages/rolling_trunk.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "core/error.h"
#include "core/parallel_for.h"
#include "core/stage_timer.h"
#include "stages/fixed_point_mean.h"

namespace parley::stages {
namespace {

// Fbank frames per task when the first window's features are computed on several threads.
constexpr std::size_t kFramesPerFeatureTask = 256;
// The reach assumed when the graph does not say (SharedTrunkConfig's margins).
constexpr std::size_t kUnknownFieldReach = 128;

std::size_t round_up(std::size_t value, std::size_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

// Why the trunk cannot roll at this step, or empty.
std::string unsupported_reason(const EmbeddingExtractor& extractor, std::size_t step_samples,
                               std::size_t time_stride) {
  const std::size_t hop = extractor.config().fbank.window_shift();
  if (step_samples == 0 || step_samples % hop != 0) {
    return fmt::format(
        "the step ({} samples) is not a whole number of {} ms fbank frames; use a step such as "
        "0.5 s or the window embedding",
        step_samples, extractor.config().fbank.frame_shift_ms);
  }
  const graph::TimeReceptiveField& field = extractor.trunk_receptive_field();
  using Kind = graph::TimeReceptiveField::Kind;
  if (field.kind == Kind::kGlobal) {
    return fmt::format(
        "the embedding model's trunk mixes the whole time axis ({}), so its frames cannot be "
        "kept from one window to the next; use the window embedding",
        field.reason);
  }
  if (field.kind == Kind::kLocal && field.stride != static_cast<std::int64_t>(time_stride)) {
    return fmt::format(
        "the embedding model's trunk keeps one frame in {} along time, not {}; use the window "
        "embedding",
        field.stride, time_stride);
  }
  return {};
}

}  // namespace

void RollingTrunkConfig::validate() const {
  if (time_stride < 1) fail("rolling trunk: time_stride must be at least 1");
  if (window_samples == 0) fail("rolling trunk: window_samples must be positive");
  if (step_samples == 0 || step_samples > window_samples) {
    fail("rolling trunk: step_samples ({}) must be between 1 and the window's {}", step_samples,
         window_samples);
  }
  if (threads < 1) fail("rolling trunk: threads must be at least 1 (got {})", threads);
}

bool rolling_trunk_supported(const EmbeddingExtractor& extractor, std::size_t step_samples,
                             std::string* why) {
  const std::string reason =
      unsupported_reason(extractor, step_samples, RollingTrunkConfig{}.time_stride);
  if (why) *why = reason;
  return reason.empty();
}

RollingTrunk::RollingTrunk(EmbeddingExtractor& extractor, RollingTrunkConfig config)
    : extractor_(extractor), config_(config), fbank_([&] {
        FbankConfig uncentred = extractor.config().fbank;
        uncentred.subtract_mean = false;
        return uncentred;
      }()) {
  config_.validate();
  const std::string reason =
      unsupported_reason(extractor, config_.step_samples, config_.time_stride);
  if (!reason.empty()) fail("stream embedding rolling: {}", reason);
  const graph::TimeReceptiveField& field = extractor.trunk_receptive_field();
  std::size_t before = kUnknownFieldReach;
  std::size_t after = kUnknownFieldReach;
  if (field.kind == graph::TimeReceptiveField::Kind::kLocal) {
    before = static_cast<std::size_t>(std::max<std::int64_t>(field.before, 0));
    after = static_cast<std::size_t>(std::max<std::int64_t>(field.after, 0));
  } else {
    spdlog::warn(
        "stream embedding rolling: cannot tell how far the embedding model's trunk reaches along "
        "time ({}); assuming {} fbank frames each way",
        field.reason, kUnknownFieldReach);
  }
  left_ = round_up(std::max(before, config_.margin_frames), config_.time_stride);
  right_ = std::max(after, config_.margin_frames);
  hop_ = fbank_.config().window_shift();
  bins_ = fbank_.config().num_mel_bins;
  window_fbank_frames_ = fbank_.num_frames(config_.window_samples);
  if (window_fbank_frames_ == 0) fail("rolling trunk: the window is shorter than one fbank frame");
  trunk_frames_per_window_ = (window_fbank_frames_ + config_.time_stride - 1) / config_.time_stride;
  step_frames_ = config_.step_samples / hop_;
  if (step_frames_ > window_fbank_frames_) {
    fail("rolling trunk: a step of {} fbank frames is longer than the window's {}", step_frames_,
         window_fbank_frames_);
  }
  sums_.assign(bins_, 0);
}

std::int64_t RollingTrunk::window_first_frame() const {
  return steps_ == 0 ? 0 : static_cast<std::int64_t>((steps_ - 1) * step_frames_);
}

std::size_t RollingTrunk::window_first_grid() const {
  const auto s = static_cast<std::size_t>(window_first_frame());
  return (s + config_.time_stride / 2) / config_.time_stride;
}

void RollingTrunk::append_log_mel(std::span<const float> window, std::size_t first,
                                  std::size_t count) {
  const std::size_t old = mel_.size();
  mel_.resize(old + count * bins_);
  const std::size_t frame_samples = fbank_.config().window_size();
  const std::size_t tasks = (count + kFramesPerFeatureTask - 1) / kFramesPerFeatureTask;
  // Frames are computed one by one from their own samples: the same bits in any task split.
  parallel_for(tasks, config_.threads, [&](std::size_t task) {
    const std::size_t task_first = task * kFramesPerFeatureTask;
    const std::size_t task_frames = std::min(kFramesPerFeatureTask, count - task_first);
    const std::size_t sample_first = (first + task_first) * hop_;
    const std::size_t sample_count = (task_frames - 1) * hop_ + frame_samples;
    fbank_.compute_into(
        window.subspan(sample_first, sample_count),
        std::span<float>(mel_.data() + old + task_first * bins_, task_frames * bins_));
  });
}

NdArray<float> RollingTrunk::prepare(std::span<const float> window) {
  if (window.size() != config_.window_samples) {
    fail("rolling trunk: a window of {} samples given, {} expected", window.size(),
         config_.window_samples);
  }
  const auto start = std::chrono::steady_clock::now();
  const auto stride = static_cast<std::int64_t>(config_.time_stride);
  const auto width = static_cast<std::int64_t>(window_fbank_frames_);
  ++steps_;
  const std::int64_t s = window_first_frame();
  const std::int64_t end = s + width;
  if (steps_ == 1) {
    mel_.clear();
    mel_first_ = 0;
    append_log_mel(window, 0, window_fbank_frames_);
    std::fill(sums_.begin(), sums_.end(), 0);
    for (std::size_t i = 0; i < mel_.size(); ++i) sums_[i % bins_] += to_fixed_point(mel_[i]);
  } else {
    // The frames that left the window leave its sum; the new ones join it.
    const std::int64_t previous = s - static_cast<std::int64_t>(step_frames_);
    for (std::int64_t f = previous; f < s; ++f) {
      const float* row = mel_.data() + static_cast<std::size_t>(f - mel_first_) * bins_;
      for (std::size_t m = 0; m < bins_; ++m) sums_[m] -= to_fixed_point(row[m]);
    }
    const std::size_t old = mel_.size();
    append_log_mel(window, window_fbank_frames_ - step_frames_, step_frames_);
    for (std::size_t i = old; i < mel_.size(); ++i) sums_[i % bins_] += to_fixed_point(mel_[i]);
    // Kept: from the grid frame at or before the window's start (a pass may start there).
    const std::int64_t keep = floor_div(s, stride) * stride;
    if (keep > mel_first_) {
      mel_.erase(mel_.begin(),
                 mel_.begin() + (keep - mel_first_) * static_cast<std::int64_t>(bins_));
      mel_first_ = keep;
    }
  }
  // Frames before the window's first pooled frame are no longer needed by any window.
  const std::size_t first_needed = window_first_grid();
  while (first_held_ < first_needed && !held_.empty()) {
    held_.pop_front();
    held_steps_.pop_front();
    ++first_held_;
  }
  if (held_.empty()) first_held_ = std::max(first_held_, first_needed);
  first_unsettled_ = std::max(first_unsettled_, first_held_);

  pass_first_ = std::max(
      static_cast<std::int64_t>(first_unsettled_) * stride - static_cast<std::int64_t>(left_),
      floor_div(s, stride) * stride);
  pass_first_ = std::max(pass_first_, mel_first_);
  pass_end_ = end;
  const auto frames = static_cast<std::size_t>(pass_end_ - pass_first_);
  NdArray<float> features({1, frames, bins_});
  std::vector<double> mean(bins_);
  for (std::size_t m = 0; m < bins_; ++m)
    mean[m] = fixed_point_mean(sums_[m], window_fbank_frames_);
  const float* source = mel_.data() + static_cast<std::size_t>(pass_first_ - mel_first_) * bins_;
  for (std::size_t f = 0; f < frames; ++f) {
    for (std::size_t m = 0; m < bins_; ++m) {
      features.data()[f * bins_ + m] =
          static_cast<float>(static_cast<double>(source[f * bins_ + m]) - mean[m]);
    }
  }
  last_pass_frames_ = frames;
  total_pass_frames_ += frames;
  prepared_ = true;
  feature_seconds_ += seconds_since(start);
  return features;
}

NdArray<float> RollingTrunk::run_trunk(const NdArray<float>& features) {
  const auto start = std::chrono::steady_clock::now();
  NdArray<float> output = extractor_.trunk_frames_from_features(features);
  trunk_seconds_ += seconds_since(start);
  return output;
}

void RollingTrunk::accept(const NdArray<float>& trunk_output) {
  if (!prepared_) fail("rolling trunk: accept() without prepare()");
  prepared_ = false;
  const std::size_t stride = config_.time_stride;
  const auto input = static_cast<std::size_t>(pass_end_ - pass_first_);
  const std::size_t produced = (input + stride - 1) / stride;
  if (trunk_output.rank() != 3 || trunk_output.dim(0) != 1 || trunk_output.dim(2) != produced) {
    fail(
        "stream embedding rolling: the embedding model turned {} fbank frames into [{}], not "
        "[1, features, {}] (time stride {}); use the window embedding with this model",
        input, fmt::join(trunk_output.shape(), ","), produced, stride);
  }
  const std::size_t pooled = trunk_output.dim(1);
  if (pooled_features_ != 0 && pooled != pooled_features_) {
    fail("rolling trunk: the trunk's features changed from {} to {}", pooled_features_, pooled);
  }
  pooled_features_ = pooled;
  const auto pass_grid = static_cast<std::size_t>(pass_first_) / stride;
  // The tail (frames not settled) is replaced by this pass's frames.
  const std::size_t keep = first_unsettled_ - first_held_;
  held_.resize(std::min(keep, held_.size()));
  held_steps_.resize(held_.size());
  for (std::size_t j = first_held_ + held_.size(); j < pass_grid + produced; ++j) {
    if (j < pass_grid) fail("rolling trunk: grid frame {} is missing from the pass", j);
    std::vector<float> column(pooled);
    const std::size_t t = j - pass_grid;
    for (std::size_t k = 0; k < pooled; ++k) column[k] = trunk_output(0, k, t);
    held_.push_back(std::move(column));
    held_steps_.push_back(steps_);
  }
  // A frame whose receptive field ends inside the window never changes again.
  const auto end = static_cast<std::size_t>(pass_end_);
  while (first_unsettled_ < first_held_ + held_.size() &&
         first_unsettled_ * stride + right_ < end) {
    ++first_unsettled_;
  }
}

void RollingTrunk::advance(std::span<const float> window) { accept(run_trunk(prepare(window))); }

NdArray<float> RollingTrunk::window_frames() const {
  const std::size_t first = window_first_grid();
  if (steps_ == 0 || first < first_held_ ||
      first + trunk_frames_per_window_ > first_held_ + held_.size()) {
    fail("rolling trunk: the window's trunk frames are not held (advance() first)");
  }
  NdArray<float> frames({pooled_features_, trunk_frames_per_window_});
  for (std::size_t t = 0; t < trunk_frames_per_window_; ++t) {
    const std::vector<float>& column = held_[first - first_held_ + t];
    for (std::size_t k = 0; k < pooled_features_; ++k) frames(k, t) = column[k];
  }
  return frames;
}

NdArray<float> RollingTrunk::embed(const NdArray<float>& segmentation) {
  if (segmentation.rank() != 3 || segmentation.dim(0) != 1) {
    fail("rolling trunk: the segmentation must be [1, frames, speakers]");
  }
  const auto start = std::chrono::steady_clock::now();
  NdArray<float> embeddings = extractor_.embed_chunks_with(
      segmentation, config_.window_samples, [&](std::span<const std::size_t> chunks) {
        NdArray<float> frames = window_frames();
        return NdArray<float>({chunks.size(), frames.dim(0), frames.dim(1)},
                              std::move(frames.values()));
      });
  pooling_seconds_ += seconds_since(start);
  return embeddings;
}

std::span<const float> RollingTrunk::held_frame(std::size_t grid) const {
  if (grid < first_held_ || grid >= first_held_ + held_.size()) {
    fail("rolling trunk: grid frame {} is not held", grid);
  }
  return held_[grid - first_held_];
}

std::size_t RollingTrunk::held_step(std::size_t grid) const {
  held_frame(grid);
  return held_steps_[grid - first_held_];
}

std::vector<double> RollingTrunk::window_mean() const {
  std::vector<double> mean(bins_);
  for (std::size_t m = 0; m < bins_; ++m)
    mean[m] = fixed_point_mean(sums_[m], window_fbank_frames_);
  return mean;
}

std::size_t RollingTrunk::bytes() const {
  std::size_t total = mel_.capacity() * sizeof(float) + sums_.capacity() * sizeof(std::int64_t);
  for (const std::vector<float>& column : held_) total += column.capacity() * sizeof(float);
  total += held_steps_.size() * sizeof(std::size_t);
  return total;
}

}  // namespace parley::stages
