#pragma once
// A recording decoded whole to 16 kHz mono, for the pipeline's random access by chunk. Short
// recordings stay in memory. Past a length, the samples go to an unlinked temporary file that is
// mapped read-only: the pipeline reads it front to back and hands back the pages it has passed
// (release_before), so a ten-hour recording (2.3 GB of samples) keeps only a window resident.
// A recording whose header states its length can also be decoded in the background, so that the
// pipeline starts on its first chunks while the rest is still being decoded.
#include <cstddef>
#include <filesystem>
#include <memory>
#include <span>
#include <vector>

namespace parley::audio {

class MonoResampledStream;
namespace testing {
struct DecodedAudioTesting;  // audio/decoded_audio_test_support.h
}  // namespace testing

class DecodedAudio {
 public:
  // Half an hour at 16 kHz: 115 MB in memory, beyond which a file holds the samples.
  static constexpr std::size_t kDefaultSpillSamples = 1800 * 16000;

  // Decodes `path` (errors as MonoResampledStream's); samples past `spill_samples` (0: none)
  // send the whole recording to a temporary file.
  static DecodedAudio decode(const std::filesystem::path& path,
                             std::size_t spill_samples = kDefaultSpillSamples);
  // Like decode(), but when the header states the length exactly (WAV, FLAC, AIFF, ...: not MP3
  // or AAC) and it is at most an hour, returns once the file is open: samples() has that length
  // at once and fills on a thread of its own, and wait_for() tells when a stretch of it can be
  // read. Otherwise it decodes whole before returning, as decode() does. Errors opening the file
  // are thrown here; errors found while decoding, by wait_for() and wait().
  static DecodedAudio decode_in_background(const std::filesystem::path& path,
                                           std::size_t spill_samples = kDefaultSpillSamples);
  // Samples already in memory, shared with the caller.
  explicit DecodedAudio(std::shared_ptr<const std::vector<float>> samples);

  DecodedAudio();
  DecodedAudio(DecodedAudio&& other) noexcept;
  DecodedAudio& operator=(DecodedAudio&& other) noexcept;
  DecodedAudio(const DecodedAudio&) = delete;
  DecodedAudio& operator=(const DecodedAudio&) = delete;
  // Stops a decode still running in the background.
  ~DecodedAudio();

  // The samples; while decoding in the background, only those before wait_for()'s `end` have
  // their values.
  std::span<const float> samples() const { return samples_; }
  // Blocks until the samples before `end` are decoded (or decoding has stopped short of it).
  // Throws the decode's error, a parley::Error naming the file. Any thread may call it.
  void wait_for(std::size_t end) const;
  // Blocks until decoding is over; throws its error. Returns at once for decode()'s result.
  void wait() const;
  // After wait(): false when the file held a different number of samples than its header
  // stated, so that samples() is not the recording (decode() reads it as it comes instead).
  bool as_announced() const;
  // Seconds spent decoding (in the background, alongside whatever ran meanwhile); after wait().
  double decode_seconds() const;

  // Whether the samples live in a mapped file rather than in memory.
  bool spilled() const { return mapping_ != nullptr; }
  // The samples before `sample` will not be read again soon: a spilled recording's pages that
  // hold only them leave this process's memory (they are read from the file again if needed,
  // so this is never wrong, only slower). Does nothing in memory.
  void release_before(std::size_t sample) const;

 private:
  // Makes a header that states another length than the file holds, which a static file cannot
  // (libsndfile stops at the count it reports, and a shortfall is an error).
  friend struct testing::DecodedAudioTesting;
  struct Background;
  // Starts filling a destination of `length` samples from `stream` (a MonoResampledStream).
  static DecodedAudio start(std::unique_ptr<MonoResampledStream> stream,
                            const std::filesystem::path& path, std::size_t length,
                            std::size_t spill_samples, bool on_own_thread);
  void stop_and_unmap();

  std::shared_ptr<const void> memory_;
  void* mapping_ = nullptr;
  std::size_t mapping_bytes_ = 0;
  std::span<const float> samples_;
  // The decode that fills samples_; stopped and joined before samples_ goes.
  std::unique_ptr<Background> background_;
  double decode_seconds_ = 0.0;
};

}  // namespace parley::audio
