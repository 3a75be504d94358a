#include "pipeline/result_writer.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "eval/rttm.h"
#include "transcript/fusion.h"
#include "transcript/writers.h"

namespace parley::pipeline {

namespace {

constexpr std::array<std::string_view, 5> kFormats = {"rttm", "json", "txt", "srt", "vtt"};

// Subtitle cues of the turns: what a player shows as "who speaks now" without a transcript.
transcript::Transcript speaker_cues(std::span<const frames::Turn> turns) {
  transcript::Transcript cues;
  cues.reserve(turns.size());
  for (const frames::Turn& turn : turns)
    cues.push_back({turn.start, turn.end, turn.speaker, {}, {}});
  return cues;
}

const SpeakerScore* find_score(std::string_view label, std::span<const SpeakerScore> scores) {
  const auto found = std::find_if(scores.begin(), scores.end(),
                                  [&](const SpeakerScore& score) { return score.label == label; });
  return found == scores.end() ? nullptr : &*found;
}

std::vector<frames::Turn> scored_turns(std::span<const frames::Turn> turns,
                                       std::span<const SpeakerScore> scores) {
  std::vector<frames::Turn> tagged(turns.begin(), turns.end());
  for (frames::Turn& turn : tagged) turn.speaker = scored_label(turn.speaker, scores);
  return tagged;
}

transcript::Transcript scored_transcript(const transcript::Transcript& words,
                                         std::span<const SpeakerScore> scores) {
  transcript::Transcript tagged = words;
  for (transcript::Segment& segment : tagged) {
    if (segment.speaker) segment.speaker = scored_label(*segment.speaker, scores);
    for (transcript::Word& word : segment.words) {
      if (word.speaker) word.speaker = scored_label(*word.speaker, scores);
    }
  }
  return tagged;
}

}  // namespace

std::string scored_label(const std::string& label, std::span<const SpeakerScore> scores) {
  const SpeakerScore* score = find_score(label, scores);
  return score == nullptr ? label : fmt::format("{} ({:.2f})", label, score->score);
}

std::span<const std::string_view> result_format_names() { return kFormats; }

std::string result_format_or_default(std::string_view format) {
  return std::string(format.empty() ? kDefaultResultFormat : format);
}

bool is_result_format(std::string_view name) {
  return std::find(kFormats.begin(), kFormats.end(), name) != kFormats.end();
}

std::string format_result(const DiarizationResult& result, std::string_view format,
                          const ResultFormatOptions& options) {
  if (!is_result_format(format)) {
    fail("format '{}': expected one of {}", format, fmt::join(kFormats, ", "));
  }
  const auto& turns = options.exclusive ? result.exclusive_turns : result.turns;
  const transcript::Transcript* words = options.transcript;
  if (format == "rttm") {
    const std::string& uri = options.uri.empty() ? result.uri : options.uri;
    // Checked for the whole result, not only per turn: one without turns refuses the same uri.
    if (std::any_of(uri.begin(), uri.end(), [](char c) {
          return std::isspace(static_cast<unsigned char>(c)) ||
                 std::iscntrl(static_cast<unsigned char>(c));
        })) {
      fail(
          "uri '{}' holds whitespace or control characters, which RTTM cannot represent; pass a "
          "name without them",
          uri);
    }
    const auto eval_turns = frames::to_eval_turns(turns, uri);
    if (options.speaker_scores.empty()) return eval::format_rttm(eval_turns);
    std::string text;
    for (const eval::Turn& turn : eval_turns) {
      const SpeakerScore* score = find_score(turn.speaker, options.speaker_scores);
      text += eval::format_rttm_line(
          turn, score != nullptr ? std::optional<double>(score->confidence) : std::nullopt);
    }
    return text;
  }
  if (format == "json") {
    std::string json =
        frames::format_json(result.turns, result.exclusive_turns, result.speaker_embeddings);
    if (words == nullptr) return json;
    auto document = nlohmann::ordered_json::parse(json);
    document["transcript"] = transcript::transcript_json(*words)["segments"];
    // A transcript's text need not be UTF-8; its writers replace what is not (U+FFFD) too.
    return document.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
  }
  const auto scores = options.speaker_scores;
  std::optional<transcript::Transcript> scored_words;
  if (words != nullptr && !scores.empty()) {
    scored_words = scored_transcript(*words, scores);
    words = &*scored_words;
  }
  const std::vector<frames::Turn> scored = scored_turns(turns, scores);
  if (format == "txt") {
    return words != nullptr ? transcript::format_text(*words) : frames::format_text(scored);
  }
  const transcript::Transcript cues = words != nullptr ? *words : speaker_cues(scored);
  return format == "srt" ? transcript::format_srt(cues) : transcript::format_webvtt(cues);
}

transcript::Transcript label_transcript(const DiarizationResult& result,
                                        const transcript::Transcript& words,
                                        const transcript::FusionOptions& fusion) {
  return transcript::assign_speakers(
      words, frames::to_eval_turns(result.exclusive_turns, result.uri), fusion);
}

}  // namespace parley::pipeline
