// Audio probing and decoding as the CLI does it (audio::load_mono_16k over open_audio_source):
// the RIFF/WAVE header check, libsndfile, libav, downmixing and resampling.
#include "audio/mono_resampled_stream.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = parley::fuzz::write_input(data, size, "recording");
  parley::fuzz::expect_parse_or_error([&] { (void)parley::audio::load_mono_16k(path); });
  return 0;
}
