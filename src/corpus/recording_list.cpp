#include "corpus/recording_list.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <iostream>
#include <map>
#include <string_view>
#include <system_error>

#include "core/error.h"
#include "core/sha256.h"
#include "core/text.h"
#include "eval/rttm.h"
#include "eval/text_records.h"

namespace parley::corpus {
namespace fs = std::filesystem;
namespace {

std::string read_standard_input() {
  std::string content;
  std::array<char, 1 << 16> block;
  while (std::cin && content.size() <= kMaxManifestBytes) {
    std::cin.read(block.data(), block.size());
    content.append(block.data(), static_cast<std::size_t>(std::cin.gcount()));
  }
  if (std::cin.bad()) fail("manifest -: cannot read standard input");
  return content;
}

// The absolute, lexically normal spelling of `path`: what tells two listed files apart.
std::string absolute_text(const fs::path& path) {
  std::error_code error;
  fs::path absolute = fs::absolute(path, error);
  if (error) absolute = path;  // no current folder: the path as written
  return absolute.lexically_normal().string();
}

}  // namespace

std::vector<fs::path> read_recording_manifest(const fs::path& manifest) {
  const bool standard_input = manifest == "-";
  std::string text;
  if (standard_input) {
    text = read_standard_input();
  } else {
    text = eval::read_text_file(manifest, "manifest");
  }
  const std::string shown = standard_input ? "standard input" : manifest.string();
  if (text.size() > kMaxManifestBytes) {
    fail("{}: larger than {} MiB; split it into several manifests", shown, kMaxManifestBytes >> 20);
  }
  // A pipe's or standard input's folder (/dev/fd, /proc/self/fd) is no place to look for
  // recordings, even when what stands behind it is a file (--manifest /dev/stdin <list.txt).
  std::error_code error;
  const std::string spelled = manifest.lexically_normal().string();
  const bool from_file = !standard_input && fs::is_regular_file(manifest, error) &&
                         !spelled.starts_with("/dev/") && !spelled.starts_with("/proc/");
  std::string_view rest(text);
  if (rest.starts_with("\xEF\xBB\xBF")) rest.remove_prefix(3);  // a UTF-8 byte order mark
  std::vector<fs::path> paths;
  while (!rest.empty()) {
    const std::size_t newline = rest.find('\n');
    std::string_view line = rest.substr(0, newline);
    rest.remove_prefix(newline == std::string_view::npos ? rest.size() : newline + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const std::string_view audio = line.substr(0, line.find('\t'));
    const auto first = audio.find_first_not_of(' ');
    if (first == std::string_view::npos || audio[first] == '#') continue;
    const fs::path path(std::string(audio.substr(first, audio.find_last_not_of(' ') - first + 1)));
    paths.push_back(path.is_absolute() || !from_file ? path : manifest.parent_path() / path);
  }
  if (paths.empty()) fail("{}: names no recording", shown);
  return paths;
}

std::vector<fs::path> without_repeats(const std::vector<fs::path>& audio,
                                      std::vector<RepeatedRecording>* repeats) {
  std::vector<fs::path> once;
  std::map<std::string, std::size_t> first_use;
  for (std::size_t i = 0; i < audio.size(); ++i) {
    const auto [earlier, fresh] = first_use.emplace(absolute_text(audio[i]), i);
    if (fresh) {
      once.push_back(audio[i]);
    } else if (repeats != nullptr) {
      repeats->push_back({i, earlier->second});
    }
  }
  return once;
}

Shard Shard::parse(const std::string& text) {
  const auto slash = text.find('/');
  Shard shard;
  std::size_t k = 0;
  const auto parse_number = [](std::string_view digits, std::size_t& value) {
    const auto [end, status] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    return status == std::errc() && end == digits.data() + digits.size() && !digits.empty();
  };
  const std::string_view view(text);
  if (slash == std::string::npos || !parse_number(view.substr(0, slash), k) ||
      !parse_number(view.substr(slash + 1), shard.count) || shard.count == 0 || k == 0 ||
      k > shard.count) {
    fail("shard '{}': expected K/N with 1 <= K <= N, e.g. 3/8 for the third of eight parts", text);
  }
  shard.index = k - 1;
  return shard;
}

std::vector<std::string> unique_output_names(const std::vector<fs::path>& audio) {
  const std::size_t count = audio.size();
  std::vector<std::string> bases(count);
  std::vector<std::string> digests(count);
  // 0: the recording id alone; k > 0: the id, then '-' and 8k hex digits of the path's sha256.
  std::vector<std::size_t> levels(count, 0);
  constexpr std::size_t kDigitsPerLevel = 8;
  constexpr std::size_t kMaxLevel = 64 / kDigitsPerLevel;
  std::map<std::string, std::size_t> first_use;
  for (std::size_t i = 0; i < count; ++i) {
    const std::string where = absolute_text(audio[i]);
    const auto [earlier, fresh] = first_use.emplace(where, i);
    if (!fresh) {
      fail("{} is listed twice (also as {}); name each recording once", audio[i].string(),
           audio[earlier->second].string());
    }
    bases[i] = eval::recording_uri(audio[i]);
    digests[i] = sha256_text(where);
    if (bases[i].size() > kMaxOutputNameBytes) levels[i] = 1;
  }
  const auto name_at = [&](std::size_t i) {
    if (levels[i] == 0) return bases[i];
    const std::size_t digits = kDigitsPerLevel * levels[i];
    // Appended piece by piece: `"-" + text` trips GCC 12's false -Wrestrict (bug 105651) once
    // recording_uri is inlined here.
    std::string name(cut_at_utf8_boundary(bases[i], kMaxOutputNameBytes - 1 - digits));
    name += '-';
    name += std::string_view(digests[i]).substr(0, digits);
    return name;
  };
  // Recordings whose names clash take more digits, all of them at once, until none clash: the
  // outcome depends on the set of paths only. Distinct paths differ in their whole digest.
  std::vector<std::string> names(count);
  for (;;) {
    std::map<std::string, std::vector<std::size_t>> users;
    for (std::size_t i = 0; i < count; ++i) {
      names[i] = name_at(i);
      users[names[i]].push_back(i);
    }
    bool clashed = false;
    for (const auto& [name, indices] : users) {
      if (indices.size() < 2) continue;
      clashed = true;
      for (const std::size_t i : indices) {
        if (levels[i] == kMaxLevel) {
          fail("{} and {} would both be written as {}; rename one of them",
               audio[indices[0]].string(), audio[indices[1]].string(), name);
        }
        ++levels[i];
      }
    }
    if (!clashed) return names;
  }
}

std::string chosen_output_name(const std::optional<std::string>& chosen, const fs::path& audio) {
  if (!chosen) return unique_output_names({audio}).front();
  const std::string& name = *chosen;
  if (name.empty() || name.find('/') != std::string::npos || name.find('\0') != std::string::npos ||
      name == "." || name == ".." || name.size() > kMaxOutputNameBytes) {
    fail(
        "name '{}' must be a file name of at most {} bytes without '/' (or none: the recording's "
        "own name)",
        // A NUL shown, so that the message is not cut at it.
        replace_all(utf8_or_escaped(name), std::string_view("\0", 1), "\\0"), kMaxOutputNameBytes);
  }
  return name;
}

}  // namespace parley::corpus
