// Identification and corpus linking time (docs/identity.md, docs/benchmarks.md): a synthetic
// corpus of embeddings (what the pipeline hands identity/), so that only the identity stage is
// timed, never the networks.
//   identity_bench [--recordings 1000] [--voices 300] [--names 50] [--dimension 256]
#include <chrono>
#include <cmath>
#include <random>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "frames/segments.h"
#include "identity/identification.h"
#include "identity/speaker_linking.h"

namespace {

using parley::NdArray;
namespace identity = parley::identity;

std::vector<float> random_unit(std::size_t dimension, std::mt19937& random) {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<float> vector(dimension);
  double norm = 0.0;
  for (float& value : vector) {
    value = static_cast<float>(normal(random));
    norm += double{value} * value;
  }
  for (float& value : vector) value = static_cast<float>(value / std::sqrt(norm));
  return vector;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("identification and linking time on a synthetic corpus");
  std::size_t recordings = 1000;
  std::size_t voices = 300;
  std::size_t names = 50;
  std::size_t dimension = 256;
  app.add_option("--recordings", recordings);
  app.add_option("--voices", voices);
  app.add_option("--names", names, "library names (3 voiceprints each)");
  app.add_option("--dimension", dimension);
  CLI11_PARSE(app, argc, argv);

  std::mt19937 random(1);
  std::vector<std::vector<float>> pool;
  for (std::size_t v = 0; v < voices; ++v) pool.push_back(random_unit(dimension, random));
  std::normal_distribution<double> noise(0.0, 0.02);
  const auto noisy = [&](const std::vector<float>& voice) {
    std::vector<float> result = voice;
    for (float& value : result) value = static_cast<float>(value + noise(random));
    return result;
  };
  std::vector<identity::Candidate> library;
  for (std::size_t n = 0; n < std::min(names, voices); ++n) {
    library.push_back(
        {fmt::format("name_{:03d}", n), {noisy(pool[n]), noisy(pool[n]), noisy(pool[n])}});
  }
  // 2 to 4 speakers per recording, each with a few turns.
  std::vector<parley::pipeline::DiarizationResult> results(recordings);
  for (std::size_t r = 0; r < recordings; ++r) {
    auto& result = results[r];
    result.uri = fmt::format("rec{:05d}", r);
    const std::size_t speakers = 2 + r % 3;
    result.speaker_embeddings = NdArray<float>({speakers, dimension});
    for (std::size_t s = 0; s < speakers; ++s) {
      const auto centroid = noisy(pool[random() % voices]);
      std::copy(centroid.begin(), centroid.end(), result.speaker_embeddings.data() + s * dimension);
      for (int t = 0; t < 20; ++t) {
        const double start = 10.0 * t + static_cast<double>(s);
        result.turns.push_back({start, start + 1.0, parley::frames::speaker_label(s),
                                static_cast<int>(s), static_cast<int>(s)});
      }
    }
    result.exclusive_turns = result.turns;
    result.speaker_count = speakers;
  }

  auto start = std::chrono::steady_clock::now();
  std::size_t named = 0;
  for (auto result : results) named += identity::identify(result, library).named.size();
  const double identification = seconds_since(start);

  start = std::chrono::steady_clock::now();
  std::vector<identity::RecordingSpeakers> speakers;
  for (const auto& result : results) speakers.push_back(identity::recording_speakers(result));
  identity::Linking linking = identity::link_speakers(speakers);
  identity::name_linked_speakers(linking, library);
  for (std::size_t r = 0; r < results.size(); ++r) {
    auto result = results[r];
    identity::apply_linking(linking, r, result);
  }
  const double linking_seconds = seconds_since(start);

  fmt::print(
      "{} recordings, {} voices, {} library names x 3 voiceprints, {} dimensions\n"
      "identification: {:.3f} s in all, {:.3f} ms per recording ({} clusters named)\n"
      "linking (with naming the global speakers): {:.3f} s in all ({} global speakers)\n",
      recordings, voices, library.size(), dimension, identification,
      1000.0 * identification / static_cast<double>(recordings), named, linking_seconds,
      linking.speakers.size());
  return 0;
}
