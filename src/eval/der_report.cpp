#include "eval/der_report.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/text.h"

namespace parley::eval {
namespace {

// Terminal columns of a UTF-8 string, counting one per code point (file ids such as "trñ00"
// would otherwise misalign the table).
std::size_t display_width(std::string_view text) {
  return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

std::string pad_right(std::string_view text, std::size_t width) {
  std::string padded(text);
  padded.append(width - std::min(width, display_width(text)), ' ');
  return padded;
}

std::string table_row(std::string_view name, std::size_t name_width, const ErrorTimes& times) {
  return fmt::format("{}  {:>7.2f}  {:>7.2f}  {:>12.2f}  {:>10.2f}  {:>10.2f}\n",
                     pad_right(name, name_width), 100.0 * times.der(),
                     100.0 * times.rate(times.missed), 100.0 * times.rate(times.false_alarm),
                     100.0 * times.rate(times.confusion), times.total);
}

std::vector<char32_t> code_points(std::string_view text) {
  std::vector<char32_t> points;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte & 0xC0) == 0x80 && !points.empty()) {
      points.back() = (points.back() << 6) | (byte & 0x3F);
    } else {
      points.push_back(byte);
    }
  }
  return points;
}

// Levenshtein distance in code points: "trñ00" is one substitution away from "trn00".
std::size_t edit_distance(std::string_view a, std::string_view b) {
  const std::vector<char32_t> x = code_points(a);
  const std::vector<char32_t> y = code_points(b);
  std::vector<std::size_t> previous(y.size() + 1);
  std::vector<std::size_t> current(y.size() + 1);
  for (std::size_t j = 0; j <= y.size(); ++j) previous[j] = j;
  for (std::size_t i = 1; i <= x.size(); ++i) {
    current[0] = i;
    for (std::size_t j = 1; j <= y.size(); ++j) {
      current[j] = std::min(
          {previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x[i - 1] == y[j - 1] ? 0 : 1)});
    }
    std::swap(previous, current);
  }
  return previous[y.size()];
}

std::string file_list(const std::vector<std::string>& files) {
  std::string list;
  for (const std::string& file : files) list += (list.empty() ? "'" : ", '") + file + "'";
  return list;
}

nlohmann::ordered_json times_json(const ErrorTimes& times) {
  nlohmann::ordered_json json;
  json["der"] = times.der();
  json["missed"] = times.rate(times.missed);
  json["false_alarm"] = times.rate(times.false_alarm);
  json["confusion"] = times.rate(times.confusion);
  json["total"] = times.total;
  return json;
}

}  // namespace

std::string format_der_table(const DerReport& report) {
  const ScoringOptions& options = report.options;
  std::string table =
      fmt::format("collar {:g} s each side of reference boundaries, overlapped speech {}, {}\n",
                  options.collar, options.skip_overlap ? "not scored" : "scored",
                  report.uem_given ? "scored regions from the UEM"
                  : options.implicit_uem == ImplicitUem::reference
                      ? "no UEM: scored from first to last reference turn"
                      : "no UEM: scored from first to last reference or hypothesis turn");
  std::size_t name_width = display_width("TOTAL");
  for (const FileScore& file : report.files) {
    name_width = std::max(name_width, display_width(file.file_id));
  }
  table += fmt::format("{}  {:>7}  {:>7}  {:>12}  {:>10}  {:>10}\n", pad_right("file", name_width),
                       "DER%", "missed%", "false alarm%", "confusion%", "speech (s)");
  for (const FileScore& file : report.files) {
    table += table_row(file.file_id, name_width, file.times);
  }
  table += table_row("TOTAL", name_width, report.overall);
  return table;
}

std::vector<std::string> unmatched_file_warnings(const DerReport& report) {
  std::vector<std::string> warnings;
  for (const std::string& file : report.hypothesis_only_files) {
    std::string warning =
        fmt::format("hypothesis file '{}' is not in the reference and is not scored", file);
    const std::string* closest = nullptr;
    std::size_t closest_distance = 3;  // further than 2 edits is not a typo
    for (const std::string& candidate : report.reference_only_files) {
      const std::size_t distance = edit_distance(file, candidate);
      if (distance < closest_distance) {
        closest = &candidate;
        closest_distance = distance;
      }
    }
    if (closest != nullptr) {
      warning +=
          fmt::format(" (the reference has '{}' with no hypothesis: same recording?)", *closest);
    }
    warnings.push_back(std::move(warning));
  }
  if (!report.reference_only_files.empty()) {
    const bool one = report.reference_only_files.size() == 1;
    warnings.push_back(fmt::format("{} {} no hypothesis turns and {} scored as all missed: {}",
                                   counted(report.reference_only_files.size(), "reference file"),
                                   one ? "has" : "have", one ? "is" : "are",
                                   file_list(report.reference_only_files)));
  }
  if (!report.uem_only_files.empty()) {
    const bool one = report.uem_only_files.size() == 1;
    warnings.push_back(fmt::format("{} {} not in the reference and {} not scored: {}",
                                   counted(report.uem_only_files.size(), "UEM file"),
                                   one ? "is" : "are", one ? "is" : "are",
                                   file_list(report.uem_only_files)));
  }
  return warnings;
}

nlohmann::ordered_json der_report_json(const DerReport& report) {
  nlohmann::ordered_json json;
  json["collar"] = report.options.collar;
  json["skip_overlap"] = report.options.skip_overlap;
  json["uem"] = report.uem_given;
  json["files"] = nlohmann::ordered_json::array();
  for (const FileScore& file : report.files) {
    nlohmann::ordered_json entry;
    entry["file"] = file.file_id;
    entry.update(times_json(file.times));
    entry["speaker_mapping"] = file.speaker_mapping;
    json["files"].push_back(std::move(entry));
  }
  json["total"] = times_json(report.overall);
  return json;
}

}  // namespace parley::eval
