#pragma once
// Small text helpers shared by the parsers (provider names, lists, subtitles, transcripts), and
// the checks that file names and paths from outside get before they are opened or written.
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace parley {

// `text` without leading and trailing ASCII whitespace (space, \t, \n, \v, \f, \r).
std::string_view trim(std::string_view text);

// `text` with every occurrence of `from` replaced by `to`, left to right; a replacement is never
// searched again. An empty `from` changes nothing.
std::string replace_all(std::string text, std::string_view from, std::string_view to);

// Length of the well-formed UTF-8 sequence at text[index] (1 to 4 bytes), 0 when the bytes there
// are not one (a stray continuation byte, an overlong form, a surrogate, a cut sequence).
std::size_t utf8_sequence_length(std::string_view text, std::size_t index);
bool is_valid_utf8(std::string_view text);

// `text` as valid UTF-8 that still tells its bytes apart: well-formed sequences as they are,
// every other byte as the four characters \xNN. For names that go into JSON (records, logs): a
// file name need not be UTF-8, and nlohmann::json refuses to write one that is not.
std::string utf8_or_escaped(std::string_view text);

// `text` cut to at most `max_bytes` bytes, never inside a well-formed UTF-8 sequence.
std::string_view cut_at_utf8_boundary(std::string_view text, std::size_t max_bytes);

// Fails (parley::Error) when `path` holds a NUL byte. The system reads a path only up to its
// first NUL, so "short.wav\0evil.wav" would open short.wav while parley names its outputs after
// the whole text. Every place that opens or accepts a path from outside checks it first.
void check_path_has_no_nul(const std::filesystem::path& path);

// A count and its noun, singular for exactly one: counted(1, "speaker") is "1 speaker",
// counted(3, "speaker") "3 speakers"; `plural` for nouns without a plain -s ("entry", "entries").
std::string counted(std::size_t count, std::string_view singular, std::string_view plural = {});

}  // namespace parley
