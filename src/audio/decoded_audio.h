#pragma once
// A recording decoded whole to 16 kHz mono, for the pipeline's random access by chunk. Short
// recordings stay in memory. Past a length, the samples go to an unlinked temporary file that is
// mapped read-only: the pipeline reads it front to back and hands back the pages it has passed
// (release_before), so a ten-hour recording (2.3 GB of samples) keeps only a window resident.
#include <cstddef>
#include <filesystem>
#include <memory>
#include <span>
#include <vector>

namespace parley::audio {

class DecodedAudio {
 public:
  // Half an hour at 16 kHz: 115 MB in memory, beyond which a file holds the samples.
  static constexpr std::size_t kDefaultSpillSamples = 1800 * 16000;

  // Decodes `path` (errors as MonoResampledStream's); samples past `spill_samples` (0: none)
  // send the whole recording to a temporary file.
  static DecodedAudio decode(const std::filesystem::path& path,
                             std::size_t spill_samples = kDefaultSpillSamples);
  // Samples already in memory, shared with the caller.
  explicit DecodedAudio(std::shared_ptr<const std::vector<float>> samples);

  DecodedAudio() = default;
  DecodedAudio(DecodedAudio&& other) noexcept;
  DecodedAudio& operator=(DecodedAudio&& other) noexcept;
  DecodedAudio(const DecodedAudio&) = delete;
  DecodedAudio& operator=(const DecodedAudio&) = delete;
  ~DecodedAudio();

  std::span<const float> samples() const { return samples_; }
  // Whether the samples live in a mapped file rather than in memory.
  bool spilled() const { return mapping_ != nullptr; }
  // The samples before `sample` will not be read again soon: a spilled recording's pages that
  // hold only them leave this process's memory (they are read from the file again if needed,
  // so this is never wrong, only slower). Does nothing in memory.
  void release_before(std::size_t sample) const;

 private:
  void unmap();

  std::shared_ptr<const std::vector<float>> memory_;
  void* mapping_ = nullptr;
  std::size_t mapping_bytes_ = 0;
  std::span<const float> samples_;
};

}  // namespace parley::audio
