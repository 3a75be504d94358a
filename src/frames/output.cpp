#include "frames/output.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/error.h"
#include "frames/segments.h"

namespace parley::frames {

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

// JSON numbers are doubles: a float widened as it is would print 17 digits of binary noise. The
// double nearest to the float's shortest decimal text prints as that text and reads back as it.
double shortest_double(float value) {
  const std::string text = fmt::format("{}", value);
  return std::strtod(text.c_str(), nullptr);
}

nlohmann::ordered_json embeddings_json(const NdArray<float>& embeddings) {
  nlohmann::ordered_json speakers = nlohmann::ordered_json::object();
  if (embeddings.rank() != 2) return speakers;
  const std::size_t dimension = embeddings.dim(1);
  for (std::size_t speaker = 0; speaker < embeddings.dim(0); ++speaker) {
    nlohmann::ordered_json row = nlohmann::ordered_json::array();
    const float* values = embeddings.data() + speaker * dimension;
    for (std::size_t i = 0; i < dimension; ++i) row.push_back(shortest_double(values[i]));
    speakers[speaker_label(speaker)] = std::move(row);
  }
  return speakers;
}

}  // namespace

std::string format_json(std::span<const Turn> diarization,
                        std::span<const Turn> exclusive_diarization,
                        const NdArray<float>& speaker_embeddings) {
  // ordered: keys in the order pyannote writes them (start, end, speaker)
  const nlohmann::ordered_json document = {
      {"diarization", turns_json(diarization)},
      {"exclusive_diarization", turns_json(exclusive_diarization)},
      {"speaker_embeddings", embeddings_json(speaker_embeddings)}};
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

}  // namespace parley::frames
