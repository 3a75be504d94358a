#include "pipeline/output.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/error.h"

namespace parley::pipeline {

namespace {

// Python's round(x, 3): the double nearest to x correctly rounded to 3 decimals.
double round_3(double value) {
  const std::string text = fmt::format("{:.3f}", value);
  return std::strtod(text.c_str(), nullptr);
}

nlohmann::ordered_json turns_json(std::span<const Turn> turns) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const Turn& turn : turns) {
    list.push_back(
        {{"start", round_3(turn.start)}, {"end", round_3(turn.end)}, {"speaker", turn.speaker}});
  }
  return list;
}

}  // namespace

std::string format_json(std::span<const Turn> diarization,
                        std::span<const Turn> exclusive_diarization) {
  // ordered: keys in the order pyannote writes them (start, end, speaker)
  const nlohmann::ordered_json document = {
      {"diarization", turns_json(diarization)},
      {"exclusive_diarization", turns_json(exclusive_diarization)}};
  return document.dump(2) + "\n";
}

std::string format_text(std::span<const Turn> turns) {
  std::string text;
  for (const Turn& turn : turns) {
    text += fmt::format("{:.3f} {:.3f} {}\n", turn.start, turn.end, turn.speaker);
  }
  return text;
}

std::vector<eval::Turn> to_eval_turns(std::span<const Turn> turns, std::string_view uri) {
  std::vector<eval::Turn> converted;
  converted.reserve(turns.size());
  for (const Turn& turn : turns) {
    converted.push_back({std::string(uri), turn.start, turn.end - turn.start, turn.speaker});
  }
  return converted;
}

void write_text_file(const std::filesystem::path& path, std::string_view content) {
  write_file_atomically(path, content);
}

}  // namespace parley::pipeline
