#include "frames/segments.h"

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "frames/binarize.h"

namespace parley::frames {

std::vector<Turn> to_turns(const SlidingWindowFeature<float>& discrete, double min_duration_on,
                           double min_duration_off) {
  BinarizeOptions options;
  options.onset = 0.5f;
  options.offset = 0.5f;
  options.min_duration_on = min_duration_on;
  options.min_duration_off = min_duration_off;
  std::vector<Turn> turns;
  for (const Region& region : binarize_regions(discrete, options)) {
    turns.push_back({region.segment.start, region.segment.end, std::string(), region.label, -1});
  }
  return turns;
}

std::vector<int> speaker_order(const std::vector<Turn>& turns) {
  std::vector<int> clusters;
  for (const Turn& turn : turns) {
    clusters.push_back(turn.cluster);
  }
  std::sort(clusters.begin(), clusters.end());
  clusters.erase(std::unique(clusters.begin(), clusters.end()), clusters.end());
  std::stable_sort(clusters.begin(), clusters.end(),
                   [](int a, int b) { return std::to_string(a) < std::to_string(b); });
  return clusters;
}

std::string speaker_label(std::size_t index) { return fmt::format("SPEAKER_{:02d}", index); }

void label_speakers(std::vector<Turn>& turns, const std::vector<int>& order) {
  for (Turn& turn : turns) {
    const auto position = std::find(order.begin(), order.end(), turn.cluster);
    turn.speaker_index = position != order.end() ? static_cast<int>(position - order.begin()) : -1;
    turn.speaker = turn.speaker_index >= 0
                       ? speaker_label(static_cast<std::size_t>(turn.speaker_index))
                       : std::to_string(turn.cluster);
  }
}

}  // namespace parley::frames
