#pragma once
// RTTM and UEM are both line-oriented, whitespace-separated NIST formats: this reads them into
// fields that keep their line numbers, so every parse error can say "file:line: what is wrong".
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace parley::eval {

struct TextRecord {
  std::size_t line_number = 0;  // 1-based, as editors show it
  std::vector<std::string_view> fields;
};

// The most a text input (RTTM, UEM, transcript, list, manifest) may hold: far more than any real
// one, and a bound on what a device such as /dev/zero named by mistake can cost.
inline constexpr std::size_t kMaxTextFileBytes = 256 << 20;

// The latest time a text input may name, in seconds (115 days): beyond any recording, and small
// enough that every writer's millisecond arithmetic stays exact. A later time is a damaged file.
inline constexpr double kMaxTimeSeconds = 1e7;

// Whole file as bytes; `what` names the kind of file in the error ("reference RTTM"). Regular
// files and pipes only (a device or socket is refused), at most kMaxTextFileBytes.
std::string read_text_file(const std::filesystem::path& path, std::string_view what);

// Splits `text` into records of ASCII-whitespace-separated fields. Blank lines and NIST comment
// lines (first field starting with ';' or '#') are skipped, a UTF-8 byte order mark is ignored,
// and CRLF line ends are accepted. The views point into `text`.
std::vector<TextRecord> split_records(std::string_view text);

// A finite decimal number such as "12.5", "0.040" or "1e-3"; anything else fails with
// "<location>: <what> '<field>' is not a number".
double parse_number(std::string_view field, std::string_view what, std::string_view location);

// A time or duration in seconds: a number from 0 to kMaxTimeSeconds; fails naming the location.
double parse_time(std::string_view field, std::string_view what, std::string_view location);

}  // namespace parley::eval
