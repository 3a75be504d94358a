#pragma once
// What a speech recogniser produced for one recording, in a form every reader fills and every
// writer reads: segments (subtitle cues, whisper segments) holding optional word timings.
// Speakers are filled in by fusion with a diarization (transcript/fusion.h).
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace parley::transcript {

struct Word {
  double start = 0.0;  // seconds from the start of the recording
  double end = 0.0;    // seconds, >= start
  std::string text;    // without surrounding whitespace
  std::optional<std::string> speaker;

  bool operator==(const Word&) const = default;
};

struct Segment {
  double start = 0.0;
  double end = 0.0;
  std::string text;         // without surrounding whitespace
  std::vector<Word> words;  // empty when the format has no word times
  std::optional<std::string> speaker;

  bool operator==(const Segment&) const = default;
};

using Transcript = std::vector<Segment>;

enum class TranscriptFormat {
  srt,
  webvtt,
  ctm,
  whisper_cpp_json,  // whisper.cpp -oj / -ojf
  openai_json,       // openai-whisper, faster-whisper, whisperX: segments[] with words[]
};

// "srt", "vtt", "ctm", "whisper-cpp-json", "openai-json": the names parse_transcript_format
// takes (the option table's transcript_format offers them beside "auto").
std::span<const std::string_view> transcript_format_names();

// One of transcript_format_names() (or "webvtt") as its format; fails naming them.
TranscriptFormat parse_transcript_format(std::string_view name);

// Guesses the format from the content (WEBVTT header, JSON keys, CTM/SRT line shapes), falling
// back on the file extension; fails with advice to pass --transcript-format when neither tells.
TranscriptFormat detect_transcript_format(std::string_view text, const std::filesystem::path& path);

// Parses `text` (named `source` in errors, which read "<source>:<line>: what is wrong").
Transcript parse_transcript(std::string_view text, TranscriptFormat format,
                            std::string_view source);

// Reads a file; the format is detected when not given.
Transcript read_transcript(const std::filesystem::path& path,
                           std::optional<TranscriptFormat> format = std::nullopt);

// Segment text made from its words: word texts joined by single spaces.
std::string join_words(const std::vector<Word>& words);

}  // namespace parley::transcript
