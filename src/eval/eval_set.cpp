#include "eval/eval_set.h"

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <string_view>

#include <fmt/format.h>

#include "core/error.h"
#include "core/text.h"
#include "eval/text_records.h"
#include "eval/uem.h"

namespace parley::eval {
namespace {

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    lines.push_back(text.substr(0, end));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return lines;
}

std::string_view without_bom(std::string_view text) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  return text;
}

std::string file_ids_text(const std::map<std::string, Annotation>& by_file) {
  std::string ids;
  for (const auto& [id, turns] : by_file) ids += fmt::format("{}'{}'", ids.empty() ? "" : ", ", id);
  return ids;
}

}  // namespace

std::vector<std::string> read_uri_list(const std::filesystem::path& list) {
  const std::string text = read_text_file(list, "URI list");
  std::vector<std::string> uris;
  std::set<std::string> seen;
  std::size_t line_number = 0;
  for (const std::string_view raw : split_lines(without_bom(text))) {
    ++line_number;
    const std::string_view line = trim(raw);
    if (line.empty() || line.front() == '#') continue;
    if (line.find_first_of(" \t") != std::string_view::npos) {
      fail("{}:{}: '{}' holds whitespace; a URI list has one recording id per line", list.string(),
           line_number, line);
    }
    if (!seen.insert(std::string(line)).second) {
      fail("{}:{}: URI '{}' is listed twice; remove the duplicate", list.string(), line_number,
           line);
    }
    uris.emplace_back(line);
  }
  return uris;
}

std::filesystem::path find_audio(const std::filesystem::path& audio_dir, const std::string& uri) {
  static constexpr std::array<const char*, 6> kExtensions = {".wav", ".flac", ".mp3",
                                                             ".ogg", ".opus", ".m4a"};
  for (const char* extension : kExtensions) {
    const std::filesystem::path candidate = audio_dir / (uri + extension);
    std::error_code error;
    if (std::filesystem::is_regular_file(candidate, error)) return candidate;
  }
  return {};
}

std::vector<EvalFile> eval_files_from_list(const std::filesystem::path& list,
                                           const std::filesystem::path& audio_dir,
                                           const std::filesystem::path& rttm,
                                           const std::optional<std::filesystem::path>& uem_path) {
  const std::vector<std::string> uris = read_uri_list(list);
  if (uris.empty()) fail("{}: no URIs; a list names one recording per line", list.string());
  const std::map<std::string, Annotation> reference = group_by_file(read_rttm(rttm));
  std::optional<Uem> uem;
  if (uem_path) uem = read_uem(*uem_path);
  std::vector<EvalFile> files;
  for (const std::string& uri : uris) {
    EvalFile file;
    file.uri = uri;
    file.audio = find_audio(audio_dir, uri);
    const auto turns = reference.find(uri);
    if (turns != reference.end()) file.reference = turns->second;
    if (uem) {
      const auto region = uem->find(uri);
      if (region != uem->end()) file.uem = region->second;
    }
    if (file.audio.empty()) {
      file.problem = fmt::format(
          "no audio for '{}' in {} (looked for {}.wav, .flac, .mp3, .ogg, "
          ".opus, .m4a); check the audio folder",
          uri, audio_dir.string(), uri);
    } else if (turns == reference.end()) {
      file.problem = fmt::format(
          "'{}' is not in the reference {} (it has {}); fix the list or "
          "the RTTM",
          uri, rttm.string(), file_ids_text(reference));
    } else if (uem && !file.uem) {
      file.problem =
          fmt::format("'{}' has no line in the UEM {}; add one or evaluate without the UEM", uri,
                      uem_path->string());
    }
    files.push_back(std::move(file));
  }
  return files;
}

std::vector<EvalFile> eval_files_from_manifest(const std::filesystem::path& manifest) {
  const std::string text = read_text_file(manifest, "manifest");
  const std::filesystem::path base = manifest.parent_path();
  const auto resolve = [&](std::string_view field) {
    const std::filesystem::path path{std::string(field)};
    return path.is_absolute() ? path : base / path;
  };
  std::vector<EvalFile> files;
  std::set<std::string> seen;
  std::size_t line_number = 0;
  for (const std::string_view raw : split_lines(without_bom(text))) {
    ++line_number;
    std::string_view line = raw;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (trim(line).empty() || trim(line).front() == '#') continue;
    std::vector<std::string_view> fields;
    while (true) {
      const std::size_t tab = line.find('\t');
      fields.push_back(trim(line.substr(0, tab)));
      if (tab == std::string_view::npos) break;
      line.remove_prefix(tab + 1);
    }
    if (fields.size() < 2 || fields.size() > 3 || fields[0].empty() || fields[1].empty()) {
      fail("{}:{}: expected 2 or 3 tab-separated fields (audio, rttm[, uem]), got {}",
           manifest.string(), line_number, fields.size());
    }
    const std::string location = fmt::format("{}:{}", manifest.string(), line_number);
    EvalFile file;
    file.audio = resolve(fields[0]);
    file.uri = file.audio.stem().string();
    std::error_code exists_error;
    if (!std::filesystem::is_regular_file(file.audio, exists_error)) {
      file.problem = fmt::format("{}: audio '{}' not found", location, file.audio.string());
      file.audio.clear();
      files.push_back(std::move(file));
      continue;
    }
    try {
      const std::map<std::string, Annotation> reference =
          group_by_file(read_rttm(resolve(fields[1])));
      if (reference.size() == 1) {
        file.uri = reference.begin()->first;
      } else if (!reference.contains(file.uri)) {
        fail(
            "{}: the reference {} has {} and none is named '{}' like the audio; give one RTTM "
            "per recording",
            location, resolve(fields[1]).string(),
            reference.empty() ? std::string("no turns") : file_ids_text(reference), file.uri);
      }
      file.reference = reference.at(file.uri);
      if (fields.size() == 3 && !fields[2].empty()) {
        const Uem uem = read_uem(resolve(fields[2]));
        const auto region = uem.find(file.uri);
        if (region == uem.end()) {
          fail("{}: the UEM {} has no line for '{}'", location, resolve(fields[2]).string(),
               file.uri);
        }
        file.uem = region->second;
      }
    } catch (const Error& error) {
      file.problem = error.what();
    }
    if (file.problem.empty() && !seen.insert(file.uri).second) {
      fail("{}: recording '{}' is listed twice; remove the duplicate", location, file.uri);
    }
    files.push_back(std::move(file));
  }
  if (files.empty())
    fail("{}: no recordings; one line is audio<TAB>rttm[<TAB>uem]", manifest.string());
  return files;
}

}  // namespace parley::eval
