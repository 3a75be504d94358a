#include "frames/sliding_window.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "core/error.h"
#include "core/sample_rate.h"

namespace parley::frames {

namespace {

// np.rint / Python round(): to nearest, ties to even (the default floating-point rounding mode).
std::int64_t round_half_even(double value) {
  return static_cast<std::int64_t>(std::nearbyint(value));
}

}  // namespace

SlidingWindow::SlidingWindow(double start, double duration, double step)
    : start_(start), duration_(duration), step_(step) {
  if (!(duration > 0.0)) {
    fail("sliding window: duration must be > 0 s (got {})", duration);
  }
  if (!(step > 0.0)) {
    fail("sliding window: step must be > 0 s (got {})", step);
  }
}

Segment SlidingWindow::operator[](std::int64_t i) const {
  const double window_start = start_ + static_cast<double>(i) * step_;
  return Segment{window_start, window_start + duration_};
}

std::int64_t SlidingWindow::closest_frame(double t) const {
  return round_half_even((t - start_ - 0.5 * duration_) / step_);
}

std::int64_t SlidingWindow::samples(double span_duration, Alignment mode) const {
  switch (mode) {
    case Alignment::kStrict:
      return static_cast<std::int64_t>(std::floor((span_duration - duration_) / step_)) + 1;
    case Alignment::kLoose:
      return static_cast<std::int64_t>(std::floor((span_duration + duration_) / step_));
    case Alignment::kCenter:
      return round_half_even(span_duration / step_);
  }
  fail("sliding window: unknown alignment mode");
}

FrameRange SlidingWindow::crop(const Segment& focus, Alignment mode) const {
  switch (mode) {
    case Alignment::kLoose: {
      // first window ending at or after focus.start, last window starting at or before focus.end
      const auto first =
          static_cast<std::int64_t>(std::ceil((focus.start - duration_ - start_) / step_));
      const auto last = static_cast<std::int64_t>(std::floor((focus.end - start_) / step_));
      return {first, last + 1};
    }
    case Alignment::kStrict: {
      const auto first = static_cast<std::int64_t>(std::ceil((focus.start - start_) / step_));
      const auto last =
          static_cast<std::int64_t>(std::floor((focus.end - duration_ - start_) / step_));
      return {first, last + 1};
    }
    case Alignment::kCenter:
      return {closest_frame(focus.start), closest_frame(focus.end) + 1};
  }
  fail("sliding window: unknown alignment mode");
}

Segment SlidingWindow::range_to_segment(std::int64_t i0, std::int64_t n) const {
  double segment_start = start_ + (static_cast<double>(i0) - 0.5) * step_ + 0.5 * duration_;
  const double segment_end = segment_start + static_cast<double>(n) * step_;
  if (i0 == 0) {
    segment_start = start_;
  }
  return Segment{segment_start, segment_end};
}

std::int64_t conv_num_frames(std::int64_t num_samples, std::span<const ConvLayer> layers) {
  std::int64_t frames = num_samples;
  for (const ConvLayer& layer : layers) {
    const std::int64_t reach =
        frames + 2 * layer.padding - layer.dilation * (layer.kernel_size - 1) - 1;
    // Python's // floors; a negative reach means the input is too short for one frame.
    const std::int64_t floored =
        reach >= 0 ? reach / layer.stride : -((-reach + layer.stride - 1) / layer.stride);
    frames = 1 + floored;
  }
  return std::max<std::int64_t>(frames, 0);
}

std::int64_t conv_receptive_field_size(std::int64_t num_frames, std::span<const ConvLayer> layers) {
  std::int64_t size = num_frames;
  for (auto layer = layers.rbegin(); layer != layers.rend(); ++layer) {
    const std::int64_t effective_kernel = 1 + (layer->kernel_size - 1) * layer->dilation;
    size = effective_kernel + (size - 1) * layer->stride - 2 * layer->padding;
  }
  return size;
}

std::int64_t conv_receptive_field_center(std::int64_t frame, std::span<const ConvLayer> layers) {
  std::int64_t center = frame;
  for (auto layer = layers.rbegin(); layer != layers.rend(); ++layer) {
    const std::int64_t effective_kernel = 1 + (layer->kernel_size - 1) * layer->dilation;
    center = center * layer->stride + (effective_kernel - 1) / 2 - layer->padding;
  }
  return center;
}

SlidingWindow receptive_field(std::span<const ConvLayer> layers, int sample_rate) {
  if (sample_rate <= 0) {
    fail("receptive field: sample rate must be positive (got {})", sample_rate);
  }
  const std::int64_t size = conv_receptive_field_size(1, layers);
  const std::int64_t step = conv_receptive_field_size(2, layers) - size;
  const double start = static_cast<double>(conv_receptive_field_center(0, layers)) -
                       static_cast<double>(size - 1) / 2.0;
  const auto rate = static_cast<double>(sample_rate);
  return SlidingWindow(start / rate, static_cast<double>(size) / rate,
                       static_cast<double>(step) / rate);
}

std::span<const ConvLayer> segmentation3_layers() {
  static constexpr std::array<ConvLayer, 6> kSincNet{{
      {251, 10, 0, 1},  // SincConv, stride 10
      {3, 3, 0, 1},     // max pool
      {5, 1, 0, 1},     // conv
      {3, 3, 0, 1},     // max pool
      {5, 1, 0, 1},     // conv
      {3, 3, 0, 1},     // max pool
  }};
  return kSincNet;
}

SlidingWindow segmentation3_frames() {
  return receptive_field(segmentation3_layers(), kSampleRate);
}

std::int64_t segmentation3_frames_per_chunk() {
  return conv_num_frames(static_cast<std::int64_t>(kSegmentationChunkDuration * kSampleRate),
                         segmentation3_layers());
}

std::int64_t ChunkPlan::valid_samples(std::int64_t chunk) const {
  const std::int64_t remaining = num_samples - chunk_offset(chunk);
  return std::clamp<std::int64_t>(remaining, 0, window_samples);
}

ChunkPlan plan_chunks(std::int64_t num_samples, int sample_rate, double chunk_duration,
                      double step) {
  if (num_samples < 0) {
    fail("chunking: negative number of samples ({})", num_samples);
  }
  if (sample_rate <= 0) {
    fail("chunking: sample rate must be positive (got {})", sample_rate);
  }
  if (!(chunk_duration > 0.0) || !(step > 0.0)) {
    fail("chunking: chunk duration and step must be > 0 s (got {} s and {} s)", chunk_duration,
         step);
  }
  if (step > chunk_duration) {
    fail(
        "chunking: step between chunks ({} s) is longer than the chunks ({} s), which would "
        "leave gaps; use a step of at most {} s",
        step, chunk_duration, chunk_duration);
  }
  ChunkPlan plan;
  plan.num_samples = num_samples;
  plan.duration = chunk_duration;
  plan.step = step;
  const auto rate = static_cast<double>(sample_rate);
  plan.window_samples = round_half_even(chunk_duration * rate);
  plan.step_samples = round_half_even(step * rate);
  if (plan.window_samples <= 0 || plan.step_samples <= 0) {
    fail("chunking: {} s chunks every {} s are less than one sample at {} Hz", chunk_duration, step,
         sample_rate);
  }
  // torch.Tensor.unfold(window, step) over complete windows
  plan.num_full_chunks = num_samples >= plan.window_samples
                             ? (num_samples - plan.window_samples) / plan.step_samples + 1
                             : 0;
  plan.has_last_chunk = num_samples < plan.window_samples ||
                        (num_samples - plan.window_samples) % plan.step_samples > 0;
  return plan;
}

void copy_chunk(std::span<const float> waveform, const ChunkPlan& plan, std::int64_t chunk,
                std::span<float> out) {
  if (chunk < 0 || chunk >= plan.num_chunks()) {
    fail("chunking: chunk {} does not exist (the recording has {} chunks)", chunk,
         plan.num_chunks());
  }
  if (static_cast<std::int64_t>(waveform.size()) != plan.num_samples) {
    fail("chunking: waveform has {} samples but the chunk plan was made for {}", waveform.size(),
         plan.num_samples);
  }
  if (static_cast<std::int64_t>(out.size()) != plan.window_samples) {
    fail("chunking: chunk buffer holds {} samples, {} needed", out.size(), plan.window_samples);
  }
  const auto offset = static_cast<std::size_t>(plan.chunk_offset(chunk));
  const auto valid = static_cast<std::size_t>(plan.valid_samples(chunk));
  std::copy_n(waveform.begin() + static_cast<std::ptrdiff_t>(offset), valid, out.begin());
  std::fill(out.begin() + static_cast<std::ptrdiff_t>(valid), out.end(), 0.0f);
}

}  // namespace parley::frames
