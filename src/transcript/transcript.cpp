#include "transcript/transcript.h"

#include <algorithm>
#include <cctype>
#include <string>

#include <fmt/format.h>

#include "core/error.h"
#include "eval/text_records.h"
#include "transcript/parsers.h"

namespace parley::transcript {
namespace {

std::string lowercase(std::string text) {
  std::ranges::transform(text, text.begin(),
                         [](unsigned char character) { return std::tolower(character); });
  return text;
}

std::string_view first_non_blank_line(std::string_view text) {
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) {
      line.remove_suffix(1);
    }
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.front()))) {
      line.remove_prefix(1);
    }
    if (!line.empty()) return line;
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return {};
}

}  // namespace

std::span<const std::string_view> transcript_format_names() {
  static constexpr std::string_view kNames[] = {"srt", "vtt", "ctm", "whisper-cpp-json",
                                                "openai-json"};
  return kNames;
}

TranscriptFormat parse_transcript_format(std::string_view name) {
  if (name == "srt") return TranscriptFormat::srt;
  if (name == "vtt" || name == "webvtt") return TranscriptFormat::webvtt;
  if (name == "ctm") return TranscriptFormat::ctm;
  if (name == "whisper-cpp-json") return TranscriptFormat::whisper_cpp_json;
  if (name == "openai-json") return TranscriptFormat::openai_json;
  fail("unknown transcript format '{}'; use srt, vtt, ctm, whisper-cpp-json or openai-json", name);
}

TranscriptFormat detect_transcript_format(std::string_view text,
                                          const std::filesystem::path& path) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  const std::string_view first = first_non_blank_line(text);
  if (first.starts_with("WEBVTT")) return TranscriptFormat::webvtt;
  if (first.starts_with("{") || first.starts_with("[")) {
    // whisper.cpp names its segment list "transcription"; the Python tools name it "segments".
    if (text.find("\"transcription\"") != std::string_view::npos) {
      return TranscriptFormat::whisper_cpp_json;
    }
    return TranscriptFormat::openai_json;
  }
  if (text.find("-->") != std::string_view::npos) return TranscriptFormat::srt;
  const std::string extension = lowercase(path.extension().string());
  if (extension == ".srt") return TranscriptFormat::srt;
  if (extension == ".vtt") return TranscriptFormat::webvtt;
  if (extension == ".ctm") return TranscriptFormat::ctm;
  if (extension == ".json") return TranscriptFormat::openai_json;
  const std::vector<eval::TextRecord> records = eval::split_records(text.substr(0, 4096));
  if (!records.empty() && records.front().fields.size() >= 5) return TranscriptFormat::ctm;
  fail(
      "cannot tell the format of transcript '{}' from its content or extension; name "
      "its format (srt, vtt, ctm, whisper-cpp-json or openai-json)",
      path.string());
}

Transcript parse_transcript(std::string_view text, TranscriptFormat format,
                            std::string_view source) {
  switch (format) {
    case TranscriptFormat::srt:
      return parse_srt(text, source);
    case TranscriptFormat::webvtt:
      return parse_webvtt(text, source);
    case TranscriptFormat::ctm:
      return parse_ctm(text, source);
    case TranscriptFormat::whisper_cpp_json:
      return parse_whisper_cpp_json(text, source);
    case TranscriptFormat::openai_json:
      return parse_openai_json(text, source);
  }
  fail("{}: unsupported transcript format", source);
}

Transcript read_transcript(const std::filesystem::path& path,
                           std::optional<TranscriptFormat> format) {
  const std::string text = eval::read_text_file(path, "transcript");
  const TranscriptFormat resolved = format ? *format : detect_transcript_format(text, path);
  return parse_transcript(text, resolved, path.string());
}

std::string join_words(const std::vector<Word>& words) {
  std::string text;
  for (const Word& word : words) {
    if (word.text.empty()) continue;
    if (!text.empty()) text += ' ';
    text += word.text;
  }
  return text;
}

}  // namespace parley::transcript
