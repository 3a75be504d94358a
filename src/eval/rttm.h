#pragma once
// RTTM ("Rich Transcription Time Marked", NIST) speaker turns: what references are distributed
// in, what md-eval/dscore/pyannote score, and what parley's pipeline writes. A SPEAKER line is
//   SPEAKER <file-id> <channel> <start> <duration> <NA> <NA> <speaker> <NA> <NA>
// File ids and speaker names are opaque byte strings (UTF-8 works); they cannot hold spaces.
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace parley::eval {

// One stretch of speech by one speaker in one recording.
struct Turn {
  std::string file_id;
  double start = 0.0;     // seconds from the start of the recording
  double duration = 0.0;  // seconds, >= 0
  std::string speaker;

  double end() const { return start + duration; }
  bool operator==(const Turn&) const = default;
};

// All turns of one recording.
using Annotation = std::vector<Turn>;

// SPEAKER turns of an RTTM file, in file order. Other NIST record types (SPKR-INFO, LEXEME, ...)
// are skipped; malformed lines fail with "<path>:<line>: what is wrong".
std::vector<Turn> read_rttm(const std::filesystem::path& path);

// Same, from text; `source` names it in error messages.
std::vector<Turn> parse_rttm(std::string_view text, std::string_view source);

// The one RTTM writer of the project: every RTTM parley writes (diarize, recluster, eval --out,
// bench, the C API) goes through format_rttm_line. The format is pyannote.core's
// Annotation.write_rttm (annotation.py `_iter_rttm`), which is what the community-1 goldens hold:
//   SPEAKER {file_id} 1 {start:.3f} {duration:.3f} <NA> <NA> {speaker} <NA> <NA>
// - start and duration are each rounded to 3 decimals from their exact double value, as
//   Python's `:.3f` does (fmt rounds the same way). The duration is the turn's own end - start,
//   rounded by itself, not round(end) - round(start): start + duration may differ from the
//   rounded end by 0.001, as in pyannote's files.
// - a duration of at most 1 us (pyannote's Segment.duration: 0 for a segment shorter than
//   SEGMENT_PRECISION = 1e-6) is written 0.000, never -0.000.
// - an empty file id is written <NA> (pyannote: `uri if uri else "<NA>"`).
// Fails when the file id or the speaker name holds whitespace (RTTM is whitespace-separated),
// when the speaker name is empty, or when the start is negative or not finite or the duration is
// NaN, infinite or negative beyond that 1 us.
std::string format_rttm_line(const Turn& turn);

// The same line with column 9 (the RTTM Conf field) holding `confidence` with 3 decimals, as a
// named speaker's identification confidence (identity/identification.h) is written; without one,
// <NA> and the same bytes as format_rttm_line(turn). parse_rttm ignores the column either way.
// Fails on a confidence that is not finite.
std::string format_rttm_line(const Turn& turn, std::optional<double> confidence);

// format_rttm_line of every turn, in order.
std::string format_rttm(std::span<const Turn> turns);

// The recording id for an audio file: its name without extension, white space and control
// characters (a NUL among them) replaced by '_' (RTTM fields are separated by white space);
// "audio" when that leaves nothing. Other bytes stay as they are, UTF-8 or not.
std::string recording_uri(const std::filesystem::path& audio);

void write_rttm(const std::filesystem::path& path, std::span<const Turn> turns);

// Turns grouped by file id (ids in byte order), each group in input order.
std::map<std::string, Annotation> group_by_file(std::span<const Turn> turns);

}  // namespace parley::eval
