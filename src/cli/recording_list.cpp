#include "cli/recording_list.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <sstream>

#include "core/error.h"
#include "core/sha256.h"
#include "eval/rttm.h"

namespace parley::cli {
namespace fs = std::filesystem;

std::vector<fs::path> read_recording_manifest(const fs::path& manifest) {
  std::error_code error;
  if (!fs::is_regular_file(manifest, error)) {
    fail("{}: not a readable file (a manifest lists one recording per line)", manifest.string());
  }
  if (fs::file_size(manifest, error) > kMaxManifestBytes) {
    fail("{}: larger than {} MiB; split it into several manifests", manifest.string(),
         kMaxManifestBytes >> 20);
  }
  std::ifstream stream(manifest);
  if (!stream) fail("{}: cannot open it", manifest.string());
  std::vector<fs::path> paths;
  std::string line;
  std::size_t number = 0;
  while (std::getline(stream, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string audio = line.substr(0, line.find('\t'));
    const auto first = audio.find_first_not_of(" ");
    if (first == std::string::npos || audio[first] == '#') continue;
    const fs::path path(audio.substr(first, audio.find_last_not_of(" ") - first + 1));
    paths.push_back(path.is_absolute() ? path : manifest.parent_path() / path);
  }
  if (paths.empty()) fail("{}: names no recording", manifest.string());
  return paths;
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
  std::vector<std::string> names;
  std::map<std::string, int> uses;
  for (const auto& path : audio) {
    names.push_back(eval::recording_uri(path));
    ++uses[names.back()];
  }
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (uses[names[i]] < 2) continue;
    const std::string where = fs::absolute(audio[i]).lexically_normal().string();
    // Appended piece by piece: `"-" + text` trips GCC 12's false -Wrestrict (bug 105651) once
    // recording_uri is inlined here.
    names[i] += '-';
    names[i] += sha256_text(where).substr(0, 8);
  }
  std::map<std::string, std::size_t> first_use;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const auto [earlier, fresh] = first_use.emplace(names[i], i);
    if (!fresh) {
      fail("{} is listed twice (also as {}); name each recording once", audio[i].string(),
           audio[earlier->second].string());
    }
  }
  return names;
}

}  // namespace parley::cli
