#include "stages/shared_first_convolution.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace parley::stages {

SharedFirstConvolution::SharedFirstConvolution(const graph::FirstConvolutionSplit& split,
                                               const runtime::SessionConfig& session,
                                               std::size_t cached_blocks,
                                               const std::string& model_name)
    : split_(split), model_name_(model_name), capacity_(std::max<std::size_t>(cached_blocks, 1)) {
  session_ = std::make_unique<runtime::OnnxSession>(
      runtime::ModelBuffer{split_.convolution_model, model_name + " (first convolution)"}, session);
  // conv(ones) over one kernel's length is each filter's sum of taps: the normalisation's
  // offset times it is what a chunk's frames are shifted by.
  const NdArray<float> ones({1, 1, static_cast<std::size_t>(split_.kernel)}, 1.0f);
  const NdArray<float> sums = session_->run({{"samples", &ones}}, {"frames"}).front();
  if (sums.rank() != 3 || sums.dim(0) != 1 || sums.dim(2) != 1 || sums.dim(1) == 0) {
    fail("{}: its first convolution returned shape [{}] for one kernel of samples", model_name_,
         fmt::join(sums.shape(), ","));
  }
  filters_ = static_cast<std::int64_t>(sums.dim(1));
  filter_sums_.assign(sums.values().begin(), sums.values().end());
}

SharedFirstConvolution::Block SharedFirstConvolution::convolve_block(
    std::span<const float> recording, std::int64_t index) {
  const std::int64_t first_sample = index * kBlockFrames * split_.stride;
  const std::int64_t length = (kBlockFrames - 1) * split_.stride + split_.kernel;
  NdArray<float> samples({1, 1, static_cast<std::size_t>(length)});
  const auto size = static_cast<std::int64_t>(recording.size());
  if (first_sample < size) {
    const std::int64_t available = std::min(length, size - first_sample);
    std::copy_n(recording.begin() + first_sample, available, samples.data());
  }
  auto frames = std::make_shared<NdArray<float>>(
      std::move(session_->run({{"samples", &samples}}, {"frames"}).front()));
  if (frames->rank() != 3 || frames->dim(1) != static_cast<std::size_t>(filters_) ||
      frames->dim(2) != static_cast<std::size_t>(kBlockFrames)) {
    fail("{}: its first convolution returned shape [{}] for {} samples", model_name_,
         fmt::join(frames->shape(), ","), length);
  }
  return frames;
}

SharedFirstConvolution::Block SharedFirstConvolution::block(std::size_t recording_key,
                                                            std::span<const float> recording,
                                                            std::int64_t index) {
  const std::pair key{recording_key, index};
  std::promise<Block> promise;
  std::shared_future<Block> pending;
  {
    const std::lock_guard lock(mutex_);
    if (auto found = blocks_.find(key); found != blocks_.end()) {
      found->second.last_use = ++clock_;
      pending = found->second.block;
    } else {
      blocks_[key] = {promise.get_future().share(), ++clock_};
      ++computed_;
      while (blocks_.size() > capacity_) {
        // Readers of an evicted block keep it through their own future.
        auto oldest = std::min_element(
            blocks_.begin(), blocks_.end(),
            [](const auto& a, const auto& b) { return a.second.last_use < b.second.last_use; });
        blocks_.erase(oldest);
      }
    }
  }
  if (pending.valid()) return pending.get();
  try {
    Block computed = convolve_block(recording, index);
    promise.set_value(computed);
    return computed;
  } catch (...) {
    promise.set_exception(std::current_exception());
    throw;
  }
}

void SharedFirstConvolution::chunk_input(std::size_t recording_key,
                                         std::span<const float> recording,
                                         std::int64_t start_sample,
                                         std::span<const float> chunk_samples,
                                         std::span<float> out) {
  const std::int64_t frames = frames_per_chunk(static_cast<std::int64_t>(chunk_samples.size()));
  if (start_sample % split_.stride != 0 || frames < 1 ||
      out.size() != static_cast<std::size_t>(filters_ * frames)) {
    fail("{}: a chunk at sample {} of {} samples cannot use the shared first convolution",
         model_name_, start_sample, chunk_samples.size());
  }
  // InstanceNormalization over the chunk (its zero padding included), population variance.
  double sum = 0.0;
  double square_sum = 0.0;
  for (const float value : chunk_samples) {
    sum += value;
    square_sum += static_cast<double>(value) * value;
  }
  const auto count = static_cast<double>(chunk_samples.size());
  const double mean = sum / count;
  const double variance = std::max(square_sum / count - mean * mean, 0.0);
  const double gain = split_.norm_scale / std::sqrt(variance + split_.norm_epsilon);
  const double offset = split_.norm_bias - gain * mean;
  const auto scale = static_cast<float>(gain);
  std::vector<float> shifts(static_cast<std::size_t>(filters_));
  for (std::int64_t f = 0; f < filters_; ++f) {
    shifts[static_cast<std::size_t>(f)] =
        static_cast<float>(offset * filter_sums_[static_cast<std::size_t>(f)]);
  }

  const std::int64_t first_frame = start_sample / split_.stride;
  const std::int64_t end_frame = first_frame + frames;
  for (std::int64_t index = first_frame / kBlockFrames; index * kBlockFrames < end_frame; ++index) {
    const Block frames_block = block(recording_key, recording, index);
    const std::int64_t from = std::max(first_frame, index * kBlockFrames);
    const std::int64_t to = std::min(end_frame, (index + 1) * kBlockFrames);
    for (std::int64_t f = 0; f < filters_; ++f) {
      const float* source = frames_block->data() + f * kBlockFrames + (from - index * kBlockFrames);
      float* target = out.data() + f * frames + (from - first_frame);
      const float shift = shifts[static_cast<std::size_t>(f)];
      for (std::int64_t t = 0; t < to - from; ++t) target[t] = scale * source[t] + shift;
    }
  }
}

void SharedFirstConvolution::clear() {
  const std::lock_guard lock(mutex_);
  blocks_.clear();
}

std::size_t SharedFirstConvolution::blocks_computed() const {
  const std::lock_guard lock(mutex_);
  return computed_;
}

}  // namespace parley::stages
