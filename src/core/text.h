#pragma once
// Small text helpers shared by the parsers (provider names, lists, subtitles, transcripts).
#include <string_view>

namespace parley {

// `text` without leading and trailing ASCII whitespace (space, \t, \n, \v, \f, \r).
std::string_view trim(std::string_view text);

}  // namespace parley
