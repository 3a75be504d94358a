#pragma once
// Small text helpers shared by the parsers (provider names, lists, subtitles, transcripts).
#include <string>
#include <string_view>

namespace parley {

// `text` without leading and trailing ASCII whitespace (space, \t, \n, \v, \f, \r).
std::string_view trim(std::string_view text);

// `text` with every occurrence of `from` replaced by `to`, left to right; a replacement is never
// searched again. An empty `from` changes nothing.
std::string replace_all(std::string text, std::string_view from, std::string_view to);

}  // namespace parley
