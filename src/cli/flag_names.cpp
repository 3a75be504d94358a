#include "cli/flag_names.h"

#include <array>
#include <cctype>
#include <utility>
#include <vector>

#include "pipeline/option_table.h"

namespace parley::cli {
namespace {

// Fields set by CLI flags that are not diarization options of the table (corpus, server and
// stream flags), or under a second name.
constexpr std::array<std::pair<std::string_view, std::string_view>, 5> kOtherFlagOfField = {{
    {"accelerator_segmentation_batch_size", "--segmentation-batch"},
    {"dim_buckets", "--dim"},
    {"overwrite_read_only", "--force"},
    {"latency_seconds", "--latency"},  // parley stream (stream::StreamConfig)
    {"match_threshold", "--match-threshold"},
}};

// Field (as library messages name it) -> the flag that sets it: the option table's, and the
// others above. Only identifiers with an underscore are listed: plain words ("threads",
// "provider") also appear in ordinary prose.
std::vector<std::pair<std::string, std::string>> flag_of_field() {
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const auto& option : pipeline::diarization_options()) {
    const std::string field = option.config_field.empty() ? option.name : option.config_field;
    if (option.faces.cli && field.find('_') != std::string::npos) {
      pairs.emplace_back(field, option.cli_flag);
    }
  }
  for (const auto& [field, flag] : kOtherFlagOfField) pairs.emplace_back(field, flag);
  return pairs;
}

bool is_identifier_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
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
    while (end < message.size() && is_identifier_char(message[end])) ++end;
    const std::string_view word = message.substr(position, end - position);
    std::string_view replacement = word;
    static const auto pairs = flag_of_field();
    for (const auto& [field, flag] : pairs) {
      if (word == field) replacement = flag;
    }
    translated += replacement;
    position = end;
  }
  return translated;
}

}  // namespace parley::cli
