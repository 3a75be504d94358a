// Test helper: re-encodes a recording as 16 kHz mono AAC in an .m4a file (with libav) or as MP3
// (with libsndfile), for tests that need one on machines without an ffmpeg or lame command.
//   encode_audio IN OUT.m4a|OUT.mp3
#include <sndfile.h>

#include <cstdio>
#include <exception>
#include <filesystem>
#include <vector>

#include "audio/audio_files_test_support.h"
#include "audio/mono_resampled_stream.h"
#include "core/sample_rate.h"

int main(int argc, char** argv) {
  const std::filesystem::path output = argc == 3 ? argv[2] : "";
  if (output.extension() != ".m4a" && output.extension() != ".mp3") {
    std::fprintf(stderr, "usage: encode_audio IN OUT.m4a|OUT.mp3\n");
    return 2;
  }
  try {
    const std::vector<float> samples = parley::audio::testing::read_all(argv[1], 16384);
    if (output.extension() == ".mp3") {
      parley::audio::testing::write_sndfile(output, SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III,
                                            parley::kSampleRate, 1, samples);
    } else {
      parley::audio::testing::write_with_libav(output, "ipod", "aac", parley::kSampleRate, 1,
                                               samples);
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "encode_audio: %s\n", error.what());
    return 1;
  }
  return 0;
}
