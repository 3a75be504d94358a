#include "eval/hypothesis_perturbation_test_support.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

namespace parley::eval::testing {
namespace {

std::vector<std::string> speaker_names(std::span<const Turn> turns) {
  std::set<std::string> names;
  for (const Turn& turn : turns) names.insert(turn.speaker);
  return {names.begin(), names.end()};
}

void set_end(Turn& turn, double end) { turn.duration = end - turn.start; }

void sort_by_start(std::vector<Turn>& turns) {
  std::stable_sort(turns.begin(), turns.end(),
                   [](const Turn& x, const Turn& y) { return x.start < y.start; });
}

std::vector<Turn> apply(Perturbation perturbation, std::vector<Turn> turns, SeededRandom& random) {
  const std::vector<std::string> names = speaker_names(turns);
  const auto any_name = [&] { return names[random.index(names.size())]; };
  switch (perturbation) {
    case Perturbation::shift_boundaries: {
      const double reach = random.uniform(0.05, 0.6);
      for (Turn& turn : turns) {
        const double end = turn.end() + random.uniform(-reach, reach);
        turn.start += random.uniform(-reach, reach);
        set_end(turn, end);
      }
      break;
    }
    case Perturbation::offset_all: {
      const double offset = random.uniform(-1.0, 1.0);
      for (Turn& turn : turns) turn.start += offset;
      break;
    }
    case Perturbation::split_turns: {
      const double probability = random.uniform(0.2, 0.6);
      std::vector<Turn> split;
      int new_speakers = 0;
      for (const Turn& turn : turns) {
        if (!random.chance(probability)) {
          split.push_back(turn);
          continue;
        }
        Turn first = turn;
        Turn second = turn;
        const double cut = turn.start + random.uniform(0.2, 0.8) * turn.duration;
        set_end(first, cut);
        second.start = cut;
        set_end(second, turn.end());
        second.speaker = random.chance(0.5) ? fmt::format("split{}", new_speakers++) : any_name();
        split.push_back(first);
        split.push_back(second);
      }
      turns = std::move(split);
      break;
    }
    case Perturbation::merge_turns: {
      const double probability = random.uniform(0.2, 0.6);
      sort_by_start(turns);
      std::vector<Turn> merged;
      for (const Turn& turn : turns) {
        if (!merged.empty() && random.chance(probability)) {
          set_end(merged.back(), std::max(merged.back().end(), turn.end()));
        } else {
          merged.push_back(turn);
        }
      }
      turns = std::move(merged);
      break;
    }
    case Perturbation::relabel_turns: {
      std::vector<std::size_t> order(names.size());
      for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
      for (std::size_t k = order.size(); k > 1; --k)
        std::swap(order[k - 1], order[random.index(k)]);
      std::map<std::string, std::string> renamed;
      for (std::size_t k = 0; k < names.size(); ++k) {
        renamed[names[k]] = fmt::format("SPEAKER_{:02}", order[k]);
      }
      const double wrong = random.uniform(0.0, 0.3);
      for (Turn& turn : turns) {
        turn.speaker = random.chance(wrong) ? renamed[any_name()] : renamed[turn.speaker];
      }
      break;
    }
    case Perturbation::drop_turns: {
      const double probability = random.uniform(0.1, 0.5);
      std::erase_if(turns, [&](const Turn&) { return random.chance(probability); });
      break;
    }
    case Perturbation::add_turns: {
      double latest = 0.0;
      for (const Turn& turn : turns) latest = std::max(latest, turn.end());
      const std::size_t count = 1 + random.index(5);
      for (std::size_t k = 0; k < count; ++k) {
        Turn added{"", random.uniform(0.0, latest + 3.0), random.uniform(0.2, 4.0),
                   names.empty() || random.chance(0.3) ? std::string("intruder") : any_name()};
        turns.push_back(added);
      }
      break;
    }
    case Perturbation::rename_unicode: {
      static const char* const kUnicodeNames[] = {"Åsa", "説話者", "Émile",
                                                  "x…y", "Łukasz", "Ωmega"};
      std::map<std::string, std::string> renamed;
      for (std::size_t k = 0; k < names.size(); ++k) {
        renamed[names[k]] = fmt::format("{}{}", kUnicodeNames[k % std::size(kUnicodeNames)], k);
      }
      for (Turn& turn : turns) turn.speaker = renamed[turn.speaker];
      break;
    }
  }
  return turns;
}

}  // namespace

double SeededRandom::uniform(double low, double high) {
  const double unit = static_cast<double>(engine_() >> 11) * 0x1.0p-53;
  return low + (high - low) * unit;
}

std::size_t SeededRandom::index(std::size_t count) {
  return static_cast<std::size_t>(engine_() % count);
}

bool SeededRandom::chance(double probability) { return uniform(0.0, 1.0) < probability; }

std::vector<Turn> perturb_reference(std::span<const Turn> reference,
                                    std::span<const Perturbation> perturbations,
                                    SeededRandom& random) {
  std::vector<Turn> turns(reference.begin(), reference.end());
  for (const Perturbation perturbation : perturbations) {
    turns = apply(perturbation, std::move(turns), random);
  }
  if (!reference.empty()) {
    for (Turn& turn : turns) turn.file_id = reference.front().file_id;
  }
  return normalize_turns(turns);
}

std::vector<Turn> normalize_turns(std::span<const Turn> turns) {
  struct Milliseconds {
    long long start;
    long long end;
  };
  std::map<std::pair<std::string, std::string>, std::vector<Milliseconds>> by_speaker;
  for (const Turn& turn : turns) {
    const long long start = std::max(0LL, std::llround(turn.start * 1000.0));
    const long long end = std::llround(turn.end() * 1000.0);
    if (end > start) by_speaker[{turn.file_id, turn.speaker}].push_back({start, end});
  }
  std::vector<Turn> normalized;
  for (auto& [key, spans] : by_speaker) {
    std::sort(spans.begin(), spans.end(),
              [](const Milliseconds& x, const Milliseconds& y) { return x.start < y.start; });
    std::vector<Milliseconds> merged;
    for (const Milliseconds& span : spans) {
      if (!merged.empty() && span.start <= merged.back().end) {
        merged.back().end = std::max(merged.back().end, span.end);
      } else {
        merged.push_back(span);
      }
    }
    for (const Milliseconds& span : merged) {
      normalized.push_back({key.first, static_cast<double>(span.start) / 1000.0,
                            static_cast<double>(span.end - span.start) / 1000.0, key.second});
    }
  }
  sort_by_start(normalized);
  return normalized;
}

}  // namespace parley::eval::testing
