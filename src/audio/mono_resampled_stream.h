#pragma once
// The audio front end of the pipeline: opens a recording, decodes it block by block, replaces
// NaN/Inf samples with 0, averages the channels to mono and resamples to 16 kHz (libsoxr HQ),
// yielding float32 samples in [-1, 1] (integer PCM is divided by its full scale; the fbank stage
// applies its own 32768 scaling). Memory stays a few blocks whatever the file's length.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "audio/audio_source.h"
#include "audio/resampler.h"
#include "core/sample_rate.h"

namespace parley::audio {

class MonoResampledStream {
 public:
  // Opens `path` (see open_audio_source for the errors it throws).
  explicit MonoResampledStream(const std::filesystem::path& path, int output_rate = kSampleRate);
  ~MonoResampledStream();
  MonoResampledStream(const MonoResampledStream&) = delete;
  MonoResampledStream& operator=(const MonoResampledStream&) = delete;

  // The file's own format, rate and channel count, as its decoder reports them.
  const AudioInfo& source_info() const { return source_->info(); }
  int sample_rate() const { return output_rate_; }

  // Fills `mono` with up to mono.size() output samples and returns how many it wrote; it writes
  // fewer only at the end of the audio, and 0 once everything has been read. Throws
  // parley::Error (naming the file) when the data turns out to be damaged.
  std::size_t read(std::span<float> mono);

  // Output samples expected for the whole file, when its header states the length exactly.
  std::optional<std::int64_t> expected_samples() const;
  std::int64_t samples_read() const { return samples_read_; }
  // Decoding progress through the source file (frames and bytes).
  DecodeProgress progress() const { return source_->progress(); }
  // NaN/Inf samples replaced by 0 so far (policy in docs/audio.md).
  std::int64_t nonfinite_samples_replaced() const { return nonfinite_replaced_; }

 private:
  // Decodes up to one block of source frames (mono_.size()) into `mono`, NaN/Inf replaced and
  // channels averaged, and returns how many; 0 once the source is exhausted.
  std::size_t decode_mono(std::span<float> mono);
  // Decodes one block from the source into ready_; false when the source is exhausted.
  bool decode_block();
  void report_nonfinite_once();

  std::filesystem::path path_;
  int output_rate_;
  std::unique_ptr<AudioSource> source_;
  std::optional<Resampler> resampler_;  // none when the file is already at output_rate_
  std::vector<float> interleaved_;      // one decoded block, all channels (none for mono files)
  std::vector<float> mono_;             // that block averaged to one channel
  std::vector<float> ready_;            // output samples not yet handed out
  std::size_t ready_offset_ = 0;
  bool source_finished_ = false;
  std::int64_t samples_read_ = 0;
  std::int64_t nonfinite_replaced_ = 0;
  bool nonfinite_reported_ = false;
};

// Decodes the whole of `path` to 16 kHz mono float32 in one vector (3 h is 690 MB; prefer
// MonoResampledStream for long recordings).
std::vector<float> load_mono_16k(const std::filesystem::path& path);

// What a vector for all of `stream`'s samples should reserve: the header's exact length, at most
// an hour's worth; 0 when the header does not state it.
std::size_t samples_to_reserve(const MonoResampledStream& stream);

// Appends `stream`'s samples to `samples`, decoding into the vector's reserved capacity, until
// the audio ends (returns true) or `samples` holds more than `limit` (returns false; the rest of
// the stream is still to be read).
bool read_into(MonoResampledStream& stream, std::vector<float>& samples, std::size_t limit);

// Gives back the unused capacity of a vector that grew as it was read.
void shrink_if_grown(std::vector<float>& samples);

}  // namespace parley::audio
