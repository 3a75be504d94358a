#include "eval/text_records.h"

#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>

#include "core/error.h"
#include "core/text.h"

namespace parley::eval {
namespace {

bool is_field_separator(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

}  // namespace

std::string read_text_file(const std::filesystem::path& path, std::string_view what) {
  check_path_has_no_nul(path);
  std::error_code ec;
  const auto type = std::filesystem::status(path, ec).type();
  if (type == std::filesystem::file_type::directory) {
    fail("{} '{}' is a folder; pass the path of a file", what, path.string());
  }
  if (!ec && type != std::filesystem::file_type::regular &&
      type != std::filesystem::file_type::fifo) {
    fail("{} '{}' is not a regular file (a device or socket); pass the path of a file", what,
         path.string());
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    fail("cannot open {} '{}': {}; check the path", what, path.string(), std::strerror(errno));
  }
  // Block by block, so that a pipe that never ends stops at the limit too.
  std::string content;
  std::array<char, 1 << 16> block;
  while (in && content.size() <= kMaxTextFileBytes) {
    in.read(block.data(), block.size());
    content.append(block.data(), static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) fail("cannot read {} '{}'", what, path.string());
  if (content.size() > kMaxTextFileBytes) {
    fail(
        "{} '{}' is larger than {} MiB; that is not a {} parley can use (split it, or check the "
        "path)",
        what, path.string(), kMaxTextFileBytes >> 20, what);
  }
  return content;
}

std::vector<TextRecord> split_records(std::string_view text) {
  constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";
  if (text.starts_with(kByteOrderMark)) text.remove_prefix(kByteOrderMark.size());

  std::vector<TextRecord> records;
  std::size_t line_number = 0;
  while (!text.empty()) {
    const std::size_t newline = text.find('\n');
    const std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    ++line_number;

    TextRecord record{line_number, {}};
    std::size_t position = 0;
    while (position < line.size()) {
      while (position < line.size() && is_field_separator(line[position])) ++position;
      const std::size_t field_start = position;
      while (position < line.size() && !is_field_separator(line[position])) ++position;
      if (position > field_start) {
        record.fields.push_back(line.substr(field_start, position - field_start));
      }
    }
    if (record.fields.empty()) continue;
    const char first = record.fields.front().front();
    if (first == ';' || first == '#') continue;
    records.push_back(std::move(record));
  }
  return records;
}

double parse_number(std::string_view field, std::string_view what, std::string_view location) {
  double value = 0.0;
  const char* const end = field.data() + field.size();
  const auto [stop, error] = std::from_chars(field.data(), end, value);
  if (error != std::errc() || stop != end || !std::isfinite(value)) {
    fail("{}: {} '{}' is not a number", location, what, field);
  }
  return value;
}

double parse_time(std::string_view field, std::string_view what, std::string_view location) {
  const double value = parse_number(field, what, location);
  if (value < 0.0 || value > kMaxTimeSeconds) {
    fail("{}: {} {} is outside 0 to {:g} seconds; the file is damaged", location, what, field,
         kMaxTimeSeconds);
  }
  return value;
}

}  // namespace parley::eval
