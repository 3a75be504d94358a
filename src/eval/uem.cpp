#include "eval/uem.h"

#include <algorithm>
#include <ostream>
#include <vector>

#include "core/error.h"
#include "eval/text_records.h"

namespace parley::eval {
namespace {

constexpr std::size_t kUemFields = 4;

struct UemLine {
  Interval interval;
  std::size_t line_number = 0;
};

}  // namespace

Uem parse_uem(std::string_view text, std::string_view source) {
  std::map<std::string, std::vector<UemLine>> lines_by_file;
  for (const TextRecord& record : split_records(text)) {
    const std::string location = fmt::format("{}:{}", source, record.line_number);
    if (record.fields.size() != kUemFields) {
      fail("{}: expected {} fields in UEM line (file channel start end), got {}", location,
           kUemFields, record.fields.size());
    }
    if (parse_number(record.fields[2], "start time", location) < 0.0) {
      fail("{}: negative start time {}", location, record.fields[2]);
    }
    const double start = parse_time(record.fields[2], "start time", location);
    const double end = parse_time(record.fields[3], "end time", location);
    if (!(end > start)) {
      fail(
          "{}: end time {} is not after start time {}; the fourth field is an end time, not a "
          "duration",
          location, record.fields[3], record.fields[2]);
    }
    lines_by_file[std::string(record.fields[0])].push_back({{start, end}, record.line_number});
  }

  Uem uem;
  for (auto& [file_id, lines] : lines_by_file) {
    std::sort(lines.begin(), lines.end(), [](const UemLine& x, const UemLine& y) {
      return x.interval.start < y.interval.start;
    });
    std::vector<Interval> intervals;
    for (std::size_t k = 0; k < lines.size(); ++k) {
      if (k > 0 && lines[k].interval.start < lines[k - 1].interval.end) {
        const auto [first, second] = std::minmax(lines[k - 1].line_number, lines[k].line_number);
        fail(
            "{}:{}: UEM segment of file '{}' overlaps the one on line {}; merge them into one "
            "line",
            source, second, file_id, first);
      }
      intervals.push_back(lines[k].interval);
    }
    uem.emplace(file_id, make_timeline(std::move(intervals)));
  }
  return uem;
}

Uem read_uem(const std::filesystem::path& path) {
  return parse_uem(read_text_file(path, "UEM file"), path.string());
}

void write_uem(std::ostream& out, const Uem& uem) {
  for (const auto& [file_id, timeline] : uem) {
    for (const Interval& interval : timeline) {
      out << fmt::format("{} 1 {:.3f} {:.3f}\n", file_id, interval.start, interval.end);
    }
  }
}

}  // namespace parley::eval
