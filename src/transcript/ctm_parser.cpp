// CTM (NIST "time marked conversation"): one word per line,
//   <file-id> <channel> <start> <duration> <word> [<confidence> ...]
// as Kaldi and sclite use it. Lines starting with ';;' or '#' are comments.
#include <cstddef>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "eval/text_records.h"
#include "transcript/parsers.h"

namespace parley::transcript {

Transcript parse_ctm(std::string_view text, std::string_view source) {
  Transcript transcript;
  std::string file_id;
  double previous_end = 0.0;
  for (const eval::TextRecord& record : eval::split_records(text)) {
    const std::string location = fmt::format("{}:{}", source, record.line_number);
    if (record.fields.size() < 5) {
      fail(
          "{}: a CTM line has at least 5 fields '<file> <channel> <start> <duration> <word>', "
          "found {}",
          location, record.fields.size());
    }
    if (file_id.empty()) {
      file_id = std::string(record.fields[0]);
    } else if (record.fields[0] != file_id) {
      fail(
          "{}: words of a second recording '{}' (the file started with '{}'); fuse one "
          "recording at a time: split the CTM by its first field",
          location, record.fields[0], file_id);
    }
    Word word;
    if (eval::parse_number(record.fields[2], "start time", location) < 0.0) {
      fail("{}: negative start time {}", location, record.fields[2]);
    }
    if (eval::parse_number(record.fields[3], "duration", location) < 0.0) {
      fail("{}: negative duration {}; the fourth field is a duration, not an end time", location,
           record.fields[3]);
    }
    word.start = eval::parse_time(record.fields[2], "start time", location);
    const double duration = eval::parse_time(record.fields[3], "duration", location);
    word.end = word.start + duration;
    word.text = std::string(record.fields[4]);
    if (!transcript.empty() && word.start < transcript.back().words.back().start) {
      fail("{}: word starts at {} s, before the previous word ({} s); sort the CTM by time",
           location, word.start, transcript.back().words.back().start);
    }
    if (transcript.empty() || word.start - previous_end > kCtmSegmentPause) {
      transcript.push_back(Segment{
          .start = word.start, .end = word.end, .text = {}, .words = {}, .speaker = std::nullopt});
    }
    Segment& segment = transcript.back();
    segment.end = std::max(segment.end, word.end);
    previous_end = std::max(previous_end, word.end);
    segment.words.push_back(std::move(word));
  }
  for (Segment& segment : transcript) segment.text = join_words(segment.words);
  return transcript;
}

}  // namespace parley::transcript
