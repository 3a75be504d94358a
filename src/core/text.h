#pragma once
// Small text helpers shared by the parsers (provider names, lists, subtitles, transcripts).
#include <cstddef>
#include <string>
#include <string_view>

namespace parley {

// `text` without leading and trailing ASCII whitespace (space, \t, \n, \v, \f, \r).
std::string_view trim(std::string_view text);

// A count and its noun, singular for exactly one: counted(1, "speaker") is "1 speaker",
// counted(3, "speaker") "3 speakers"; `plural` for nouns without a plain -s ("entry", "entries").
std::string counted(std::size_t count, std::string_view singular, std::string_view plural = {});

}  // namespace parley
