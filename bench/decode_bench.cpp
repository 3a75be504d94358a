// Time to decode a recording to 16 kHz mono before segmentation can start (issue #18): a benchmark
// program, not a test. Decodes the file --repeat times through DecodedAudio::decode and prints
// each run's wall time, whether it spilled to a file, and a digest of the samples, so that a
// faster decoder can be shown to give the very same output.
//   decode_bench --audio X [--repeat 3] [--spill-samples N (0: never spill)] [--background]
//                [--no-digest]
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <string>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "audio/decoded_audio.h"
#include "core/sha256.h"
#include "core/stage_timer.h"

namespace {

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

// User plus system CPU seconds of this process so far: on a shared machine, steadier than the
// wall time.
double cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& time) {
    return static_cast<double>(time.tv_sec) + static_cast<double>(time.tv_usec) * 1e-6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"parley decode benchmark"};
  std::string audio_path;
  int repeat = 3;
  std::size_t spill_samples = parley::audio::DecodedAudio::kDefaultSpillSamples;
  app.add_option("--audio", audio_path)->required();
  app.add_option("--repeat", repeat);
  app.add_option("--spill-samples", spill_samples, "0: keep every sample in memory");
  bool background = false;
  app.add_flag("--background", background,
               "decode_in_background: also time until the first 10 s chunk can be read");
  bool no_digest = false;
  app.add_flag("--no-digest", no_digest, "skip the digest (for profiling the decode alone)");
  CLI11_PARSE(app, argc, argv);
  try {
    for (int run = 0; run < repeat; ++run) {
      const double cpu_start = cpu_seconds();
      const auto start = std::chrono::steady_clock::now();
      const auto decoded =
          background ? parley::audio::DecodedAudio::decode_in_background(audio_path, spill_samples)
                     : parley::audio::DecodedAudio::decode(audio_path, spill_samples);
      std::string first_chunk;
      if (background) {
        decoded.wait_for(10 * 16000);
        first_chunk = fmt::format("first chunk after {:.4f} s, ", parley::seconds_since(start));
      }
      decoded.wait();
      const double wall = parley::seconds_since(start);
      const double cpu = cpu_seconds() - cpu_start;
      // Before the digest, which touches every sample of a mapped recording.
      const double rss = peak_rss_mib();
      const auto samples = decoded.samples();
      const std::string digest =
          no_digest ? "no digest"
                    : parley::sha256_text(std::string(reinterpret_cast<const char*>(samples.data()),
                                                      samples.size_bytes()));
      fmt::print(
          "run {}: {}{:.3f} s wall, {:.3f} s CPU, {} samples ({:.1f} s of audio), {}, peak RSS "
          "{:.0f} MiB, {}\n",
          run, first_chunk, wall, cpu, samples.size(),
          static_cast<double>(samples.size()) / 16000.0,
          decoded.spilled() ? "spilled" : "in memory", rss, digest);
      std::fflush(stdout);
    }
  } catch (const std::exception& error) {
    fmt::print(stderr, "decode_bench: {}\n", error.what());
    return 1;
  }
  return 0;
}
