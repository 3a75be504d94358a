#include "audio/mono_resampled_stream.h"

#include <algorithm>
#include <cmath>

#include <spdlog/spdlog.h>

#include "audio/downmix.h"
#include "core/error.h"

namespace parley::audio {
namespace {

// Frames decoded per block: 8192 (about 0.2-0.5 s at common rates) keeps per-call overhead
// negligible; files with many channels get fewer frames so that a block stays under 1 MB.
constexpr std::size_t kFramesPerBlock = 8192;
constexpr std::size_t kMaxSamplesPerBlock = 1 << 18;

std::size_t frames_per_block(int channels) {
  return std::min(kFramesPerBlock, kMaxSamplesPerBlock / static_cast<std::size_t>(channels));
}

}  // namespace

MonoResampledStream::MonoResampledStream(const std::filesystem::path& path, int output_rate)
    : path_(path), output_rate_(output_rate), source_(open_audio_source(path)) {
  if (output_rate <= 0) fail("{}: cannot resample to {} Hz", path.string(), output_rate);
  const AudioInfo& info = source_->info();
  if (info.sample_rate != output_rate_) resampler_.emplace(info.sample_rate, output_rate_);
  const std::size_t frames = frames_per_block(info.channels);
  interleaved_.resize(frames * static_cast<std::size_t>(info.channels));
  mono_.resize(frames);
}

MonoResampledStream::~MonoResampledStream() { report_nonfinite_once(); }

std::optional<std::int64_t> MonoResampledStream::expected_samples() const {
  const AudioInfo& info = source_->info();
  if (!info.frames || !info.frames_exact) return std::nullopt;
  if (!resampler_) return *info.frames;
  return static_cast<std::int64_t>(
      std::llround(static_cast<double>(*info.frames) * output_rate_ / info.sample_rate));
}

bool MonoResampledStream::decode_block() {
  ready_.clear();
  ready_offset_ = 0;
  if (source_finished_) return false;
  const std::size_t frames = source_->read(interleaved_);
  const auto channels = static_cast<std::size_t>(source_->info().channels);
  const std::span<float> decoded(interleaved_.data(), frames * channels);
  for (float& sample : decoded) {
    if (!std::isfinite(sample)) {
      sample = 0.0f;
      ++nonfinite_replaced_;
    }
  }
  const std::span<float> mono(mono_.data(), frames);
  downmix_to_mono(decoded, source_->info().channels, mono);
  if (frames == 0) source_finished_ = true;
  if (resampler_) {
    if (frames > 0) resampler_->process(mono, ready_);
    if (source_finished_) resampler_->flush(ready_);
  } else {
    ready_.assign(mono.begin(), mono.end());
  }
  if (source_finished_) report_nonfinite_once();
  return true;
}

std::size_t MonoResampledStream::read(std::span<float> mono) {
  std::size_t written = 0;
  while (written < mono.size()) {
    if (ready_offset_ == ready_.size()) {
      if (!decode_block()) break;
      continue;
    }
    const std::size_t count = std::min(ready_.size() - ready_offset_, mono.size() - written);
    std::copy_n(ready_.begin() + static_cast<std::ptrdiff_t>(ready_offset_), count,
                mono.begin() + static_cast<std::ptrdiff_t>(written));
    ready_offset_ += count;
    written += count;
  }
  samples_read_ += static_cast<std::int64_t>(written);
  return written;
}

void MonoResampledStream::report_nonfinite_once() {
  if (nonfinite_replaced_ == 0 || nonfinite_reported_) return;
  nonfinite_reported_ = true;
  spdlog::warn("{}: replaced {} NaN/Inf sample(s) with 0 (the file's float data is damaged)",
               path_.string(), nonfinite_replaced_);
}

std::vector<float> load_mono_16k(const std::filesystem::path& path) {
  MonoResampledStream stream(path, kSampleRate);
  constexpr std::size_t kReadBlock = 1 << 16;
  std::vector<float> samples;
  // One block of headroom: reading the last block must not make the vector double its capacity.
  // The header's length is only believed up to an hour: a damaged FLAC header claimed 550
  // billion samples (fuzz_audio), and longer files simply grow the vector as they are read.
  constexpr std::int64_t kMostSamplesReserved = std::int64_t{3600} * kSampleRate;
  if (const auto expected = stream.expected_samples()) {
    samples.reserve(
        static_cast<std::size_t>(std::clamp<std::int64_t>(*expected, 0, kMostSamplesReserved)) +
        kReadBlock);
  }
  while (true) {
    const std::size_t start = samples.size();
    samples.resize(start + kReadBlock);
    const std::size_t got = stream.read(std::span<float>(samples).subspan(start));
    samples.resize(start + got);
    if (got < kReadBlock) break;
  }
  samples.shrink_to_fit();
  return samples;
}

}  // namespace parley::audio
