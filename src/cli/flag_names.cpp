#include "cli/flag_names.h"

#include <array>
#include <cctype>
#include <utility>

namespace parley::cli {
namespace {

// Field (as library messages name it) -> the flag that sets it. Only identifiers with an
// underscore are listed: plain words ("threads", "provider") also appear in ordinary prose.
constexpr std::array<std::pair<std::string_view, std::string_view>, 17> kFlagOfField = {{
    {"step_seconds", "--step"},
    {"models_dir", "--models"},
    {"embedding_mode", "--embedding-mode"},
    {"embedding_batch_size", "--embedding-batch"},
    {"accelerator_segmentation_batch_size", "--segmentation-batch"},
    {"segmentation_batch_size", "--segmentation-batch"},
    {"segmentation_accelerator_sessions", "--segmentation-sessions"},
    {"accelerator_float16", "--gpu-float16"},
    {"num_speakers", "--num-speakers"},
    {"min_speakers", "--min-speakers"},
    {"max_speakers", "--max-speakers"},
    {"provider_options", "--provider-option"},
    {"dim_buckets", "--dim"},
    {"overwrite_read_only", "--force"},
    {"engines_per_device", "--engines"},
    {"device_list", "--devices"},
    {"decode_threads", "--jobs"},
}};

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
    for (const auto& [field, flag] : kFlagOfField) {
      if (word == field) replacement = flag;
    }
    translated += replacement;
    position = end;
  }
  return translated;
}

}  // namespace parley::cli
