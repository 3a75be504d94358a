// Test helper: re-encodes a recording as AAC in an .m4a file with libav, for tests that need an
// m4a on machines without an ffmpeg command.
//   encode_m4a IN OUT.m4a
#include <cstdio>
#include <exception>
#include <vector>

#include "audio/mono_resampled_stream.h"
#include "audio/test_audio_files.h"
#include "core/sample_rate.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: encode_m4a IN OUT.m4a\n");
    return 2;
  }
  try {
    const std::vector<float> samples = parley::audio::testing::read_all(argv[1], 16384);
    parley::audio::testing::write_with_libav(argv[2], "ipod", "aac",
                                             parley::kSampleRate, 1, samples);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "encode_m4a: %s\n", error.what());
    return 1;
  }
  return 0;
}
