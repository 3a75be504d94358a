// The JSON transcripts of whisper.cpp (-oj, -ojf) and of the Python whisper family
// (openai-whisper, faster-whisper, whisperX). A syntax error names its line (from nlohmann's byte
// offset); an error about content names the value by its JSON pointer ("/segments/3/start").
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/text.h"
#include "eval/text_records.h"
#include "transcript/parsers.h"

namespace parley::transcript {
namespace {

using Json = nlohmann::json;
// Where a value sits in the document (RFC 6901: "/segments/3/start"), for errors about content.
using JsonPath = Json::json_pointer;

std::size_t line_of_offset(std::string_view text, std::size_t offset) {
  offset = std::min(offset, text.size());
  return 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + offset, '\n'));
}

std::string path_name(const JsonPath& path) {
  return path.empty() ? "the top level" : path.to_string();
}

// Error context shared by one parse: the text (for the line of a syntax error) and its name.
class JsonReader {
 public:
  JsonReader(std::string_view text, std::string_view source) : text_(text), source_(source) {}

  Json parse() const {
    try {
      return Json::parse(text_);
    } catch (const Json::parse_error& error) {
      // nlohmann's byte is one past the offending character.
      const std::size_t byte = error.byte > 0 ? error.byte - 1 : 0;
      std::string detail = error.what();
      const std::size_t colon = detail.rfind(": ");
      if (colon != std::string::npos) detail = detail.substr(colon + 2);
      fail("{}:{}: not valid JSON ({}); is the file complete?", source_,
           line_of_offset(text_, byte), detail);
    } catch (const Json::out_of_range& error) {
      // A number such as 1e999 that no double holds; nlohmann gives no position for it.
      std::string detail = error.what();
      const std::size_t bracket = detail.find("] ");
      if (bracket != std::string::npos) detail = detail.substr(bracket + 2);
      fail("{}: {}; times must be from 0 to {:g} seconds", source_, detail, eval::kMaxTimeSeconds);
    }
  }

  [[noreturn]] void fail_at(const JsonPath& path, const std::string& problem) const {
    fail("{}: {} {}", source_, path_name(path), problem);
  }

  const Json& member(const Json& object, const JsonPath& path, const std::string& key) const {
    if (!object.is_object()) fail_at(path, "is not a JSON object");
    const auto found = object.find(key);
    if (found == object.end()) fail_at(path, fmt::format("has no \"{}\"", key));
    return *found;
  }

  double number(const Json& value, const JsonPath& path, double divisor = 1.0) const {
    if (!value.is_number()) fail_at(path, "is not a number");
    const double result = value.get<double>() / divisor;
    if (!std::isfinite(result) || result < 0.0 || result > eval::kMaxTimeSeconds) {
      fail_at(path, fmt::format("is {}; times must be from 0 to {:g} seconds", value.dump(),
                                eval::kMaxTimeSeconds));
    }
    return result;
  }

  std::string string(const Json& value, const JsonPath& path) const {
    if (!value.is_string()) fail_at(path, "is not a string");
    return value.get<std::string>();
  }

  void check_order(const Segment& segment, const JsonPath& path) const {
    if (segment.end < segment.start) {
      fail_at(path, fmt::format("ends ({} s) before it starts ({} s)", segment.end, segment.start));
    }
  }

 private:
  std::string_view text_;
  std::string_view source_;
};

// whisper.cpp writes token text byte for byte, and a token can end inside a multi-byte UTF-8
// character (CJK, emoji), which a strict JSON parser rejects. Each byte that is not part of a
// valid sequence is carried through parsing as the private-use character U+F700 + byte and
// turned back into the byte when tokens are joined into words, where the pieces meet again.
constexpr unsigned kRawByteBase = 0xF700;

std::string protect_raw_bytes(std::string_view text) {
  std::string protected_text;
  protected_text.reserve(text.size());
  for (std::size_t index = 0; index < text.size();) {
    const std::size_t length = utf8_sequence_length(text, index);
    if (length > 0) {
      protected_text.append(text.substr(index, length));
      index += length;
      continue;
    }
    const unsigned code = kRawByteBase + static_cast<unsigned char>(text[index]);
    protected_text += static_cast<char>(0xE0 | (code >> 12));
    protected_text += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    protected_text += static_cast<char>(0x80 | (code & 0x3F));
    ++index;
  }
  return protected_text;
}

std::string restore_raw_bytes(std::string_view text) {
  std::string restored;
  restored.reserve(text.size());
  for (std::size_t index = 0; index < text.size(); ++index) {
    // U+F780..U+F7FF is EF 9E 80 .. EF 9F BF in UTF-8.
    const auto byte = [&](std::size_t offset) -> unsigned {
      return static_cast<unsigned char>(text[index + offset]);
    };
    if (index + 2 < text.size() && byte(0) == 0xEF && (byte(1) == 0x9E || byte(1) == 0x9F) &&
        byte(2) >= 0x80 && byte(2) <= 0xBF) {
      const unsigned code = (0xFu << 12) | ((byte(1) & 0x3Fu) << 6) | (byte(2) & 0x3Fu);
      restored += static_cast<char>(code - kRawByteBase);
      index += 2;
      continue;
    }
    restored += text[index];
  }
  return restored;
}

// whisper.cpp's special tokens print as "[_BEG_]", "[_TT_150]", "<|endoftext|>", ...
bool is_special_token(const std::string& text) {
  return (text.starts_with("[_") && text.ends_with("]")) ||
         (text.starts_with("<|") && text.ends_with("|>"));
}

// Whisper tokens are word pieces; a piece starting with a space starts a new word.
std::vector<Word> words_from_tokens(const JsonReader& reader, const Json& tokens,
                                    const JsonPath& path) {
  if (!tokens.is_array()) reader.fail_at(path, "is not an array");
  std::vector<Word> words;
  for (std::size_t index = 0; index < tokens.size(); ++index) {
    const JsonPath token_path = path / index;
    const Json& token = tokens[index];
    const std::string text = restore_raw_bytes(
        reader.string(reader.member(token, token_path, "text"), token_path / "text"));
    if (is_special_token(text) || trim(text).empty()) continue;
    // Without -ojf's token times (older whisper.cpp, or no timestamps) there are no word times.
    if (!token.contains("offsets")) return {};
    const JsonPath offsets_path = token_path / "offsets";
    const Json& offsets = token["offsets"];
    const double start =
        reader.number(reader.member(offsets, offsets_path, "from"), offsets_path / "from", 1000.0);
    const double end =
        reader.number(reader.member(offsets, offsets_path, "to"), offsets_path / "to", 1000.0);
    const bool starts_word = words.empty() || std::isspace(static_cast<unsigned char>(text[0]));
    if (starts_word) {
      words.push_back(Word{.start = start,
                           .end = std::max(start, end),
                           .text = std::string(trim(text)),
                           .speaker = std::nullopt});
    } else {
      words.back().text += trim(text);
      words.back().end = std::max(words.back().end, end);
    }
  }
  return words;
}

}  // namespace

Transcript parse_whisper_cpp_json(std::string_view raw_text, std::string_view source) {
  // Raw bytes become three-byte characters: offsets move, line numbers stay.
  const std::string text = protect_raw_bytes(raw_text);
  const JsonReader reader(text, source);
  const Json document = reader.parse();
  const Json& segments = reader.member(document, JsonPath(), "transcription");
  const JsonPath segments_path("/transcription");
  if (!segments.is_array()) reader.fail_at(segments_path, "is not an array");
  Transcript transcript;
  for (std::size_t index = 0; index < segments.size(); ++index) {
    const JsonPath path = segments_path / index;
    const Json& entry = segments[index];
    const Json& offsets = reader.member(entry, path, "offsets");
    const JsonPath offsets_path = path / "offsets";
    Segment segment;
    segment.start =
        reader.number(reader.member(offsets, offsets_path, "from"), offsets_path / "from", 1000.0);
    segment.end =
        reader.number(reader.member(offsets, offsets_path, "to"), offsets_path / "to", 1000.0);
    reader.check_order(segment, path);
    segment.text = std::string(
        trim(restore_raw_bytes(reader.string(reader.member(entry, path, "text"), path / "text"))));
    if (entry.is_object() && entry.contains("tokens")) {
      segment.words = words_from_tokens(reader, entry["tokens"], path / "tokens");
    }
    if (segment.text.empty() && segment.words.empty()) continue;
    transcript.push_back(std::move(segment));
  }
  return transcript;
}

Transcript parse_openai_json(std::string_view text, std::string_view source) {
  const JsonReader reader(text, source);
  const Json document = reader.parse();
  // The tools write {"segments": [...]}; a bare list of segments is accepted too.
  JsonPath segments_path;
  const Json* segments = &document;
  if (document.is_object()) {
    segments = &reader.member(document, JsonPath(), "segments");
    segments_path /= "segments";
  }
  if (!segments->is_array()) reader.fail_at(segments_path, "is not an array of segments");
  Transcript transcript;
  for (std::size_t index = 0; index < segments->size(); ++index) {
    const JsonPath path = segments_path / index;
    const Json& entry = (*segments)[index];
    Segment segment;
    segment.start = reader.number(reader.member(entry, path, "start"), path / "start");
    segment.end = reader.number(reader.member(entry, path, "end"), path / "end");
    reader.check_order(segment, path);
    segment.text =
        std::string(trim(reader.string(reader.member(entry, path, "text"), path / "text")));
    if (entry.contains("words")) {
      const JsonPath words_path = path / "words";
      const Json& words = entry["words"];
      if (!words.is_array()) reader.fail_at(words_path, "is not an array");
      double previous_end = segment.start;
      for (std::size_t word_index = 0; word_index < words.size(); ++word_index) {
        const JsonPath word_path = words_path / word_index;
        const Json& entry_word = words[word_index];
        if (!entry_word.is_object()) reader.fail_at(word_path, "is not a JSON object");
        // openai-whisper and faster-whisper say "word", some converters "text".
        const char* text_key = entry_word.contains("word") ? "word" : "text";
        Word word;
        word.text = std::string(trim(
            reader.string(reader.member(entry_word, word_path, text_key), word_path / text_key)));
        // whisperX leaves out the times of words it could not align (numbers, symbols): such a
        // word sits at the end of the word before it.
        if (entry_word.contains("start") && entry_word.contains("end")) {
          word.start = reader.number(entry_word["start"], word_path / "start");
          word.end = std::max(word.start, reader.number(entry_word["end"], word_path / "end"));
        } else if (entry_word.contains("start") != entry_word.contains("end")) {
          reader.fail_at(word_path, "has only one of \"start\" and \"end\"");
        } else {
          word.start = word.end = previous_end;
        }
        previous_end = word.end;
        if (!word.text.empty()) segment.words.push_back(std::move(word));
      }
    }
    if (segment.text.empty()) segment.text = join_words(segment.words);
    if (segment.text.empty()) continue;
    transcript.push_back(std::move(segment));
  }
  return transcript;
}

}  // namespace parley::transcript
