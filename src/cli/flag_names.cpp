#include "cli/flag_names.h"

#include <array>
#include <cctype>
#include <map>
#include <utility>

#include "pipeline/option_table.h"
#include "stream/stream_options.h"

namespace parley::cli {
namespace {

// Fields set by CLI flags that are not diarization options of the table (corpus, server and
// stream flags), or under a second name.
constexpr std::array<std::pair<std::string_view, std::string_view>, 3> kOtherFlagOfField = {{
    {"accelerator_segmentation_batch_size", "--segmentation-batch"},
    {"dim_buckets", "--dim"},
    {"overwrite_read_only", "--force"},
}};

// The stream's options StreamConfig::validate names (`parley stream`'s flags). Not its rate and
// channels, which may come from a WAV header rather than a flag, nor its embedding, a word of
// many batch messages.
bool names_stream_flag(const pipeline::OptionSpec& option) {
  return option.faces.cli && option.name != "sample_rate" && option.name != "channels" &&
         option.name != "embedding";
}

// Option name or configuration field (as library messages name them) -> the flag that sets it.
const std::map<std::string, std::string, std::less<>>& flag_of_name() {
  static const std::map<std::string, std::string, std::less<>> flags = [] {
    std::map<std::string, std::string, std::less<>> pairs;
    for (const auto& option : pipeline::diarization_options()) {
      if (!option.faces.cli) continue;
      pairs.emplace(option.name, option.cli_flag);
      if (!option.config_field.empty()) pairs.emplace(option.config_field, option.cli_flag);
    }
    for (const auto& option : stream::stream_options()) {
      if (!names_stream_flag(option)) continue;
      pairs.emplace(option.name, option.cli_flag);
      if (!option.config_field.empty()) pairs.emplace(option.config_field, option.cli_flag);
    }
    for (const auto& [field, flag] : kOtherFlagOfField) pairs.emplace(field, flag);
    return pairs;
  }();
  return flags;
}

bool is_identifier_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

// Whether a plain word (no underscore) at `position`, followed by `next`, names an option rather
// than standing in prose: what comes before it (`before`, the message up to the word) says so.
bool names_an_option(std::string_view before, char next) {
  if (before.ends_with("contradicts ") || before.ends_with("use ")) return true;
  const bool clause_start = before.empty() || before.ends_with("; ") || before.ends_with("(");
  return clause_start && (next == ':' || next == ' ');
}

}  // namespace

std::string with_flag_names(std::string_view message) {
  std::string translated;
  translated.reserve(message.size());
  std::size_t position = 0;
  while (position < message.size()) {
    if (!is_identifier_char(message[position])) {
      translated += message[position++];
      continue;
    }
    std::size_t end = position;
    // A dotted field ("shared_trunk.features") is one name; a sentence's full stop is not.
    while (end < message.size() &&
           (is_identifier_char(message[end]) || (message[end] == '.' && end + 1 < message.size() &&
                                                 is_identifier_char(message[end + 1])))) {
      ++end;
    }
    const std::string_view word = message.substr(position, end - position);
    const auto found = flag_of_name().find(word);
    const char next = end < message.size() ? message[end] : '\0';
    if (found != flag_of_name().end() && (word.find('_') != std::string_view::npos ||
                                          names_an_option(message.substr(0, position), next))) {
      translated += found->second;
    } else {
      translated += word;
    }
    position = end;
  }
  return translated;
}

}  // namespace parley::cli
