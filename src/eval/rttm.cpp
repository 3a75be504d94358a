#include "eval/rttm.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <fstream>

#include "core/atomic_file.h"
#include "core/error.h"
#include "eval/text_records.h"

namespace parley::eval {
namespace {

// Record types of the RTTM specification (NIST RT-09 evaluation plan, appendix A) that carry no
// speaker turn; they are legal in a file but play no part in diarization scoring here.
constexpr std::array<std::string_view, 13> kOtherRecordTypes = {
    "SEGMENT",    "NOSCORE", "NO_RT_METADATA", "LEXEME", "NON-LEX",
    "NON-SPEECH", "FILLER",  "EDIT",           "IP",     "SU",
    "CB",         "A/P",     "SPKR-INFO"};

// The standard SPEAKER line has 10 fields; RT-04 era files omit the last (signal lookahead).
constexpr std::size_t kSpeakerFields = 10;
constexpr std::size_t kLegacySpeakerFields = 9;

std::string upper_ascii(std::string_view text) {
  std::string upper(text);
  for (char& c : upper) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return upper;
}

bool holds_whitespace(std::string_view text) {
  return text.find_first_of(" \t\r\n\v\f") != std::string_view::npos;
}

}  // namespace

std::vector<Turn> parse_rttm(std::string_view text, std::string_view source) {
  std::vector<Turn> turns;
  for (const TextRecord& record : split_records(text)) {
    const std::string location = fmt::format("{}:{}", source, record.line_number);
    const std::string type = upper_ascii(record.fields[0]);
    if (type != "SPEAKER") {
      if (std::find(kOtherRecordTypes.begin(), kOtherRecordTypes.end(), type) !=
          kOtherRecordTypes.end()) {
        continue;
      }
      fail(
          "{}: unknown RTTM record type '{}'; expected SPEAKER lines "
          "(SPEAKER file channel start duration <NA> <NA> speaker <NA> <NA>)",
          location, record.fields[0]);
    }
    const std::size_t field_count = record.fields.size();
    if (field_count != kSpeakerFields && field_count != kLegacySpeakerFields) {
      fail(
          "{}: expected {} fields in SPEAKER line, got {} "
          "(SPEAKER file channel start duration <NA> <NA> speaker <NA> <NA>)",
          location, kSpeakerFields, field_count);
    }
    Turn turn;
    turn.file_id = std::string(record.fields[1]);
    turn.speaker = std::string(record.fields[7]);
    if (parse_number(record.fields[3], "start time", location) < 0.0) {
      fail("{}: negative start time {} (times are seconds from the start of the recording)",
           location, record.fields[3]);
    }
    if (parse_number(record.fields[4], "duration", location) < 0.0) {
      fail("{}: negative duration {}; the fifth field is a duration, not an end time", location,
           record.fields[4]);
    }
    turn.start = parse_time(record.fields[3], "start time", location);
    turn.duration = parse_time(record.fields[4], "duration", location);
    turns.push_back(std::move(turn));
  }
  return turns;
}

std::vector<Turn> read_rttm(const std::filesystem::path& path) {
  return parse_rttm(read_text_file(path, "RTTM file"), path.string());
}

std::string format_rttm_line(const Turn& turn) { return format_rttm_line(turn, std::nullopt); }

std::string format_rttm_line(const Turn& turn, std::optional<double> confidence) {
  // pyannote.core's SEGMENT_PRECISION: a segment shorter than this has duration 0.
  constexpr double kSegmentPrecision = 1e-6;
  if (holds_whitespace(turn.file_id)) {
    fail(
        "cannot write RTTM: file id '{}' holds whitespace, which RTTM cannot represent; rename "
        "the file or choose another recording id",
        turn.file_id);
  }
  if (turn.speaker.empty() || holds_whitespace(turn.speaker)) {
    fail(
        "cannot write RTTM: speaker name '{}' is empty or holds whitespace, which RTTM cannot "
        "represent",
        turn.speaker);
  }
  if (!std::isfinite(turn.start) || turn.start < 0.0 || !std::isfinite(turn.duration) ||
      turn.duration < -kSegmentPrecision) {
    fail("cannot write RTTM: turn of '{}' in '{}' has start {} and duration {}; both must be >= 0",
         turn.speaker, turn.file_id, turn.start, turn.duration);
  }
  if (confidence && !std::isfinite(*confidence)) {
    fail("cannot write RTTM: confidence {} of '{}' is not a number", *confidence, turn.speaker);
  }
  const std::string_view file_id = turn.file_id.empty() ? "<NA>" : std::string_view(turn.file_id);
  const double duration = turn.duration > kSegmentPrecision ? turn.duration : 0.0;
  return fmt::format("SPEAKER {} 1 {:.3f} {:.3f} <NA> <NA> {} {} <NA>\n", file_id, turn.start,
                     duration, turn.speaker,
                     confidence ? fmt::format("{:.3f}", *confidence) : std::string("<NA>"));
}

std::string recording_uri(const std::filesystem::path& audio) {
  std::string uri = audio.stem().string();
  // Control characters too: a NUL would cut the file id (and any file named after it) short.
  std::replace_if(
      uri.begin(), uri.end(),
      [](unsigned char c) { return std::isspace(c) != 0 || c < 0x20 || c == 0x7F; }, '_');
  return uri.empty() ? "audio" : uri;
}

std::string format_rttm(std::span<const Turn> turns) {
  std::string text;
  for (const Turn& turn : turns) text += format_rttm_line(turn);
  return text;
}

void write_rttm(const std::filesystem::path& path, std::span<const Turn> turns) {
  write_file_atomically(path, format_rttm(turns));
}

std::map<std::string, Annotation> group_by_file(std::span<const Turn> turns) {
  std::map<std::string, Annotation> by_file;
  for (const Turn& turn : turns) by_file[turn.file_id].push_back(turn);
  return by_file;
}

}  // namespace parley::eval
