// SRT and WebVTT cues: a timing line "start --> end" followed by text lines, cues separated by
// blank lines. Inline markup (<i>, <v Speaker>, <00:00:01.000>) is dropped from the text.
#include <cctype>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "core/text.h"
#include "eval/text_records.h"
#include "transcript/parsers.h"

namespace parley::transcript {
namespace {

struct Line {
  std::size_t number = 0;  // 1-based
  std::string_view text;
};

std::vector<Line> split_lines(std::string_view text) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  std::vector<Line> lines;
  std::size_t number = 0;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    if (line.ends_with('\r')) line.remove_suffix(1);
    lines.push_back({++number, line});
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return lines;
}

bool is_blank(std::string_view line) { return trim(line).empty(); }

// Reads a run of digits; false when there is none.
bool read_digits(std::string_view& text, long& value, std::size_t& count) {
  value = 0;
  count = 0;
  while (!text.empty() && std::isdigit(static_cast<unsigned char>(text.front()))) {
    // More digits than any timestamp field holds would overflow `value`.
    if (count == 12) return false;
    value = value * 10 + (text.front() - '0');
    text.remove_prefix(1);
    ++count;
  }
  return count > 0;
}

// [HH:]MM:SS(,|.)mmm — SRT requires the hours, WebVTT allows leaving them out; both separators
// are accepted because real files mix them up.
bool parse_timestamp(std::string_view text, double& seconds) {
  std::vector<long> parts;
  long value = 0;
  std::size_t digits = 0;
  if (!read_digits(text, value, digits)) return false;
  parts.push_back(value);
  while (!text.empty() && text.front() == ':') {
    text.remove_prefix(1);
    if (!read_digits(text, value, digits)) return false;
    parts.push_back(value);
  }
  if (parts.size() < 2 || parts.size() > 3) return false;
  double fraction = 0.0;
  if (!text.empty() && (text.front() == ',' || text.front() == '.')) {
    text.remove_prefix(1);
    if (!read_digits(text, value, digits) || digits > 9) return false;
    fraction = static_cast<double>(value);
    for (std::size_t digit = 0; digit < digits; ++digit) fraction /= 10.0;
  }
  if (!text.empty()) return false;
  const long hours = parts.size() == 3 ? parts[0] : 0;
  const long minutes = parts[parts.size() - 2];
  const long whole_seconds = parts.back();
  if (minutes >= 60 || whole_seconds >= 60) return false;
  seconds = static_cast<double>(hours * 3600 + minutes * 60 + whole_seconds) + fraction;
  return true;
}

bool is_timing_line(std::string_view line) { return line.find("-->") != std::string_view::npos; }

// "start --> end [cue settings]"
void parse_timing_line(const Line& line, std::string_view source, std::string_view format,
                       double& start, double& end) {
  const std::size_t arrow = line.text.find("-->");
  const std::string_view start_text = trim(line.text.substr(0, arrow));
  std::string_view rest = trim(line.text.substr(arrow + 3));
  const std::size_t space = rest.find_first_of(" \t");
  const std::string_view end_text = rest.substr(0, space);
  if (!parse_timestamp(start_text, start)) {
    fail("{}:{}: start time '{}' is not a {} timestamp like 00:01:02{}500", source, line.number,
         start_text, format, format == "SRT" ? "," : ".");
  }
  if (!parse_timestamp(end_text, end)) {
    fail("{}:{}: end time '{}' is not a {} timestamp like 00:01:02{}500", source, line.number,
         end_text, format, format == "SRT" ? "," : ".");
  }
  if (end > eval::kMaxTimeSeconds) {
    fail("{}:{}: end time '{}' is later than {:g} seconds; the file is damaged", source,
         line.number, end_text, eval::kMaxTimeSeconds);
  }
  if (end < start) {
    fail("{}:{}: cue ends ({}) before it starts ({}); fix the timing line", source, line.number,
         end_text, start_text);
  }
}

// Drops <...> markup and decodes the few character references subtitle files use.
std::string plain_text(std::string_view text) {
  std::string plain;
  bool in_tag = false;
  for (std::size_t index = 0; index < text.size(); ++index) {
    const char character = text[index];
    if (in_tag) {
      if (character == '>') in_tag = false;
      continue;
    }
    if (character == '<') {
      in_tag = true;
      continue;
    }
    if (character == '&') {
      static constexpr std::pair<std::string_view, char> kEntities[] = {
          {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&nbsp;", ' '}, {"&quot;", '"'}};
      bool decoded = false;
      for (const auto& [entity, replacement] : kEntities) {
        if (text.substr(index).starts_with(entity)) {
          plain += replacement;
          index += entity.size() - 1;
          decoded = true;
          break;
        }
      }
      if (decoded) continue;
    }
    plain += character;
  }
  return plain;
}

// Text lines of one cue joined by spaces.
std::string cue_text(const std::vector<Line>& lines, std::size_t first, std::size_t last) {
  std::string text;
  for (std::size_t index = first; index < last; ++index) {
    const std::string line = plain_text(lines[index].text);
    const std::string_view trimmed = trim(line);
    if (trimmed.empty()) continue;
    if (!text.empty()) text += ' ';
    text += trimmed;
  }
  return text;
}

bool all_digits(std::string_view text) {
  if (text.empty()) return false;
  for (const char character : text) {
    if (!std::isdigit(static_cast<unsigned char>(character))) return false;
  }
  return true;
}

}  // namespace

Transcript parse_srt(std::string_view text, std::string_view source) {
  const std::vector<Line> lines = split_lines(text);
  Transcript transcript;
  std::size_t index = 0;
  while (index < lines.size()) {
    if (is_blank(lines[index].text)) {
      ++index;
      continue;
    }
    // A block: [number] timing text...
    std::size_t timing = index;
    if (!is_timing_line(lines[timing].text)) {
      if (!all_digits(trim(lines[timing].text))) {
        fail(
            "{}:{}: expected a cue number or a timing line '00:00:01,000 --> 00:00:02,500', "
            "found '{}'; is this an SRT file?",
            source, lines[timing].number, trim(lines[timing].text));
      }
      ++timing;
      if (timing >= lines.size() || !is_timing_line(lines[timing].text)) {
        fail("{}:{}: cue {} has no timing line '00:00:01,000 --> 00:00:02,500' after its number",
             source, lines[index].number, trim(lines[index].text));
      }
    }
    Segment segment;
    parse_timing_line(lines[timing], source, "SRT", segment.start, segment.end);
    // Text runs to a blank line, or to the next cue when a file leaves the blank line out.
    std::size_t end = timing + 1;
    while (end < lines.size() && !is_blank(lines[end].text) && !is_timing_line(lines[end].text)) {
      ++end;
    }
    if (end < lines.size() && is_timing_line(lines[end].text) && end > timing + 1 &&
        all_digits(trim(lines[end - 1].text))) {
      --end;  // that number starts the next cue
    }
    segment.text = cue_text(lines, timing + 1, end);
    if (!segment.text.empty()) transcript.push_back(std::move(segment));
    index = end;
  }
  return transcript;
}

Transcript parse_webvtt(std::string_view text, std::string_view source) {
  const std::vector<Line> lines = split_lines(text);
  if (lines.empty() || !lines.front().text.starts_with("WEBVTT")) {
    fail("{}:1: a WebVTT file starts with the line 'WEBVTT'; is this an SRT file?", source);
  }
  Transcript transcript;
  std::size_t index = 1;
  // The header runs until the first blank line.
  while (index < lines.size() && !is_blank(lines[index].text)) ++index;
  while (index < lines.size()) {
    if (is_blank(lines[index].text)) {
      ++index;
      continue;
    }
    std::size_t end = index;
    while (end < lines.size() && !is_blank(lines[end].text)) ++end;
    const std::string_view first = lines[index].text;
    if (first.starts_with("NOTE") || first.starts_with("STYLE") || first.starts_with("REGION")) {
      index = end;
      continue;
    }
    std::size_t timing = index;
    if (!is_timing_line(lines[timing].text)) ++timing;  // a cue identifier
    if (timing >= end || !is_timing_line(lines[timing].text)) {
      fail("{}:{}: expected a cue timing line '00:00:01.000 --> 00:00:02.500', found '{}'", source,
           lines[index].number, trim(first));
    }
    Segment segment;
    parse_timing_line(lines[timing], source, "WebVTT", segment.start, segment.end);
    segment.text = cue_text(lines, timing + 1, end);
    if (!segment.text.empty()) transcript.push_back(std::move(segment));
    index = end;
  }
  return transcript;
}

}  // namespace parley::transcript
