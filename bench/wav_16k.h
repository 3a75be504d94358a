#pragma once
// Reads a 16 kHz mono sound file through libsndfile alone, for the benchmark programs: they must
// run on machines that get only a few carried libraries (bench/gpu/bundle), where the audio
// module's decoders (libav) would not fit. `parley` and the tests read audio through audio/ (any
// format and rate).
#include <filesystem>
#include <vector>

namespace parley::bench {

// Samples as float in [-1, 1) (libsndfile scales int16 by 1/32768, as torchaudio does). Fails
// naming the file when it cannot be opened, is not 16 kHz mono, or is cut short.
std::vector<float> read_wav_16k_mono(const std::filesystem::path& path);

}  // namespace parley::bench
