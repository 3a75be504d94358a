#include "audio/mono_resampled_stream.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include <spdlog/spdlog.h>

#include "audio/downmix.h"
#include "core/error.h"

#include "core/text.h"

namespace parley::audio {
namespace {

// Frames decoded per block: 8192 (about 0.2-0.5 s at common rates) keeps per-call overhead
// negligible; files with many channels get fewer frames so that a block stays under 1 MB.
constexpr std::size_t kFramesPerBlock = 8192;
constexpr std::size_t kMaxSamplesPerBlock = 1 << 18;

std::size_t frames_per_block(int channels) {
  return std::min(kFramesPerBlock, kMaxSamplesPerBlock / static_cast<std::size_t>(channels));
}

// Replaces NaN and Inf with 0 and returns how many there were. A first pass only counts them,
// branch-free so that it vectorizes: real recordings have none, and that pass is all they pay.
std::size_t replace_nonfinite(std::span<float> samples) {
  constexpr std::uint32_t kExponent = 0x7f800000u;  // all ones: Inf or NaN
  std::size_t count = 0;
  for (const float sample : samples) {
    count += (std::bit_cast<std::uint32_t>(sample) & kExponent) == kExponent ? 1 : 0;
  }
  if (count == 0) return 0;
  for (float& sample : samples) {
    if (!std::isfinite(sample)) sample = 0.0f;
  }
  return count;
}

}  // namespace

MonoResampledStream::MonoResampledStream(const std::filesystem::path& path, int output_rate)
    : path_(path), output_rate_(output_rate), source_(open_audio_source(path)) {
  if (output_rate <= 0) fail("{}: cannot resample to {} Hz", path.string(), output_rate);
  const AudioInfo& info = source_->info();
  if (info.sample_rate != output_rate_) resampler_.emplace(info.sample_rate, output_rate_);
  const std::size_t frames = frames_per_block(info.channels);
  if (info.channels > 1) interleaved_.resize(frames * static_cast<std::size_t>(info.channels));
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

std::size_t MonoResampledStream::decode_mono(std::span<float> mono) {
  if (source_finished_) return 0;
  const auto channels = static_cast<std::size_t>(source_->info().channels);
  const std::size_t block = std::min(mono.size(), mono_.size());
  // A mono file decodes straight into `mono`; others go through interleaved_ and are averaged.
  const std::span<float> target =
      channels == 1 ? mono.first(block) : std::span<float>(interleaved_).first(block * channels);
  const std::size_t frames = source_->read(target);
  const std::span<float> decoded = target.first(frames * channels);
  nonfinite_replaced_ += static_cast<std::int64_t>(replace_nonfinite(decoded));
  if (channels > 1) downmix_to_mono(decoded, source_->info().channels, mono.first(frames));
  if (frames == 0) {
    source_finished_ = true;
    report_nonfinite_once();
  }
  return frames;
}

bool MonoResampledStream::decode_block() {
  ready_.clear();
  ready_offset_ = 0;
  if (source_finished_) return false;
  const std::size_t frames = decode_mono(mono_);
  if (resampler_) {
    if (frames > 0) resampler_->process(std::span<const float>(mono_).first(frames), ready_);
    if (source_finished_) resampler_->flush(ready_);
  } else {
    ready_.assign(mono_.begin(), mono_.begin() + static_cast<std::ptrdiff_t>(frames));
  }
  return true;
}

std::size_t MonoResampledStream::read(std::span<float> mono) {
  std::size_t written = 0;
  while (written < mono.size()) {
    if (ready_offset_ == ready_.size()) {
      // Nothing to resample and room for a whole block: decode into the caller's samples.
      if (!resampler_ && mono.size() - written >= mono_.size()) {
        const std::size_t frames = decode_mono(mono.subspan(written, mono_.size()));
        if (frames == 0) break;
        written += frames;
        continue;
      }
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
  spdlog::warn("{}: replaced {} with 0 (the file's float data is damaged)", path_.string(),
               counted(static_cast<std::size_t>(nonfinite_replaced_), "NaN/Inf sample"));
}

std::size_t samples_to_reserve(const MonoResampledStream& stream) {
  // The header's length is only believed up to an hour: a damaged FLAC header claimed 550
  // billion samples (fuzz_audio), and longer files simply grow the vector as they are read.
  constexpr std::int64_t kMostSamplesReserved = std::int64_t{3600} * kSampleRate;
  const auto expected = stream.expected_samples();
  if (!expected) return 0;
  return static_cast<std::size_t>(std::clamp<std::int64_t>(*expected, 0, kMostSamplesReserved));
}

bool read_into(MonoResampledStream& stream, std::vector<float>& samples, std::size_t limit) {
  constexpr std::size_t kReadBlock = 1 << 16;
  std::vector<float> aside;
  while (true) {
    const std::size_t start = samples.size();
    const std::size_t room = std::min(samples.capacity() - start, kReadBlock);
    std::size_t wanted = room;
    std::size_t got = 0;
    if (room > 0) {
      // Straight into the vector's reserved memory: no copy.
      samples.resize(start + room);
      got = stream.read(std::span<float>(samples).subspan(start));
      samples.resize(start + got);
    } else {
      // A full vector is usually one whose header gave the exact length: reading aside finds the
      // end without doubling its capacity (and copying the whole recording) for nothing.
      aside.resize(kReadBlock);
      wanted = kReadBlock;
      got = stream.read(aside);
      samples.insert(samples.end(), aside.begin(),
                     aside.begin() + static_cast<std::ptrdiff_t>(got));
    }
    if (samples.size() > limit) return false;
    if (got < wanted) return true;
  }
}

void shrink_if_grown(std::vector<float>& samples) {
  // Shrinking copies the whole recording: worth it for a vector that grew by doubling (up to
  // half of it unused), not for one reserved from the header.
  if (samples.capacity() - samples.size() > samples.size() / 8) samples.shrink_to_fit();
}

std::vector<float> load_mono_16k(const std::filesystem::path& path) {
  MonoResampledStream stream(path, kSampleRate);
  std::vector<float> samples;
  samples.reserve(samples_to_reserve(stream));
  read_into(stream, samples, std::numeric_limits<std::size_t>::max());
  shrink_if_grown(samples);
  return samples;
}

}  // namespace parley::audio
