#include "wav_16k.h"

#include <sndfile.h>

#include <memory>

#include "core/error.h"

namespace parley::bench {

std::vector<float> read_wav_16k_mono(const std::filesystem::path& path) {
  SF_INFO info{};
  std::unique_ptr<SNDFILE, decltype(&sf_close)> file(sf_open(path.c_str(), SFM_READ, &info),
                                                     &sf_close);
  if (!file) fail("{}: cannot open: {}", path.string(), sf_strerror(nullptr));
  if (info.samplerate != 16000 || info.channels != 1) {
    fail(
        "{}: needs 16 kHz mono (got {} Hz, {} channels); convert it with `sox IN -r 16000 -c 1 "
        "OUT`",
        path.string(), info.samplerate, info.channels);
  }
  std::vector<float> samples(static_cast<std::size_t>(info.frames));
  if (sf_readf_float(file.get(), samples.data(), info.frames) != info.frames) {
    fail("{}: short read; the file may be truncated", path.string());
  }
  return samples;
}

}  // namespace parley::bench
