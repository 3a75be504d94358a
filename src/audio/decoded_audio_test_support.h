#pragma once
// For tests of what reads a recording while it is decoded (DecodedAudio::decode_in_background):
// a background decode that plans on a stated length other than the file's, as a header that lies
// would make it, so that the stream ends elsewhere and as_announced() turns false.
#include <cstddef>
#include <filesystem>
#include <memory>

#include "audio/decoded_audio.h"
#include "audio/mono_resampled_stream.h"
#include "core/sample_rate.h"

namespace parley::audio::testing {

struct DecodedAudioTesting {
  // Decodes `path` in the background into `stated_samples` samples (16 kHz mono), as if its
  // header had stated that length.
  static DecodedAudio decode_in_background_stating(
      const std::filesystem::path& path, std::size_t stated_samples,
      std::size_t spill_samples = DecodedAudio::kDefaultSpillSamples) {
    return DecodedAudio::start(std::make_unique<MonoResampledStream>(path, kSampleRate), path,
                               stated_samples, spill_samples, true);
  }
};

}  // namespace parley::audio::testing
