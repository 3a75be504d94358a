#include "eval/rttm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "core/error.h"
#include "testing/shared_data.h"
#include "testing/temporary_directory.h"

namespace parley::eval {
namespace {

std::string error_of(std::string_view text) {
  try {
    parse_rttm(text, "REF.rttm");
  } catch (const Error& error) {
    return error.what();
  }
  return "no error";
}

TEST(Rttm, ParsesSpeakerLines) {
  const auto turns = parse_rttm(
      "SPEAKER dev00 1 1.440 11.872 <NA> <NA> MEE009 <NA> <NA>\n"
      "SPEAKER dev00 1 13.152 3.770 <NA> <NA> MEE012 <NA> <NA>\n",
      "x");
  ASSERT_EQ(turns.size(), 2u);
  EXPECT_EQ(turns[0], (Turn{"dev00", 1.440, 11.872, "MEE009"}));
  EXPECT_EQ(turns[1].speaker, "MEE012");
  EXPECT_DOUBLE_EQ(turns[1].end(), 13.152 + 3.770);
}

TEST(Rttm, AcceptsWhatNistToolsAccept) {
  // Tabs and runs of spaces, CRLF, a byte order mark, comments, blank lines, the 9-field RT-04
  // layout, a lower-case type, and other record types that carry no speaker turn.
  const auto turns = parse_rttm(
      "\xEF\xBB\xBFSPEAKER  a\t1 0.5 1 <NA> <NA> s1 <NA> <NA>\r\n"
      ";; comment\n"
      "\n"
      "   # another comment\n"
      "SPKR-INFO a 1 <NA> <NA> <NA> adult_male s1 <NA> <NA>\n"
      "speaker a 1 2 1e-1 <NA> <NA> s2 <NA>\n"
      "SPEAKER b 1 0 0 <NA> <NA> s1 <NA> <NA>\n",
      "x");
  ASSERT_EQ(turns.size(), 3u);
  EXPECT_EQ(turns[0], (Turn{"a", 0.5, 1.0, "s1"}));
  EXPECT_EQ(turns[1], (Turn{"a", 2.0, 0.1, "s2"}));
  EXPECT_EQ(turns[2], (Turn{"b", 0.0, 0.0, "s1"}));
}

TEST(Rttm, UnicodeNamesPassThrough) {
  const auto turns = parse_rttm("SPEAKER trñ00 1 3.168 0.800 <NA> <NA> MÉO069 <NA> <NA>\n", "x");
  ASSERT_EQ(turns.size(), 1u);
  EXPECT_EQ(turns[0].file_id, "trñ00");
  EXPECT_EQ(turns[0].speaker, "MÉO069");
}

TEST(Rttm, MalformedLinesNameFileAndLine) {
  EXPECT_EQ(error_of("SPEAKER a 1 0 1 <NA> <NA> s <NA> <NA>\nSPEAKER a 1 0 1 <NA> <NA>\n"),
            "REF.rttm:2: expected 10 fields in SPEAKER line, got 7 "
            "(SPEAKER file channel start duration <NA> <NA> speaker <NA> <NA>)");
  EXPECT_EQ(error_of("SPEAKER a 1 zero 1 <NA> <NA> s <NA> <NA>"),
            "REF.rttm:1: start time 'zero' is not a number");
  EXPECT_EQ(error_of("SPEAKER a 1 0 1.2.3 <NA> <NA> s <NA> <NA>"),
            "REF.rttm:1: duration '1.2.3' is not a number");
  EXPECT_EQ(error_of("SPEAKER a 1 0 nan <NA> <NA> s <NA> <NA>"),
            "REF.rttm:1: duration 'nan' is not a number");
  EXPECT_EQ(error_of("\n\nSPEAKER a 1 5 -1 <NA> <NA> s <NA> <NA>"),
            "REF.rttm:3: negative duration -1; the fifth field is a duration, not an end time");
  EXPECT_EQ(error_of("SPEAKER a 1 -2 1 <NA> <NA> s <NA> <NA>"),
            "REF.rttm:1: negative start time -2 (times are seconds from the start of the "
            "recording)");
  EXPECT_EQ(error_of("SPEEKER a 1 0 1 <NA> <NA> s <NA> <NA>"),
            "REF.rttm:1: unknown RTTM record type 'SPEEKER'; expected SPEAKER lines "
            "(SPEAKER file channel start duration <NA> <NA> speaker <NA> <NA>)");
}

TEST(Rttm, MissingFileIsAnError) {
  try {
    read_rttm("/nonexistent/parley/ref.rttm");
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("/nonexistent/parley/ref.rttm"), std::string::npos);
    EXPECT_NE(std::string(error.what()).find("No such file"), std::string::npos);
  }
}

TEST(Rttm, WritesWhatItReads) {
  const std::vector<Turn> turns = {{"trñ00", 3.168, 0.8, "MÉO069"}, {"b", 0.0, 12.0005, "s2"}};
  EXPECT_EQ(format_rttm_line(turns[0]), "SPEAKER trñ00 1 3.168 0.800 <NA> <NA> MÉO069 <NA> <NA>\n");
  const parley::testing::TemporaryDirectory temp("rttm-test");
  const auto path = temp / "turns.rttm";
  write_rttm(path, turns);
  const auto back = read_rttm(path);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0], turns[0]);
  EXPECT_EQ(back[1].file_id, "b");
  EXPECT_NEAR(back[1].duration, 12.0005, 0.0005 + 1e-12);
}

TEST(Rttm, RefusesToWriteWhatRttmCannotHold) {
  EXPECT_THROW(format_rttm_line({"my file", 0, 1, "s"}), Error);
  EXPECT_THROW(format_rttm_line({"f", 0, 1, ""}), Error);
  EXPECT_THROW(format_rttm_line({"f", 0, 1, "a\tb"}), Error);
  EXPECT_THROW(format_rttm_line({"f", 0, -1, "s"}), Error);
  EXPECT_THROW(format_rttm_line({"f", -0.5, 1, "s"}), Error);
  EXPECT_THROW(format_rttm_line({"f", 0, std::nan(""), "s"}), Error);
  EXPECT_THROW(format_rttm_line({"f", std::numeric_limits<double>::infinity(), 1, "s"}), Error);
}

// The format rules of pyannote.core's Annotation.write_rttm (see rttm.h).
TEST(Rttm, WritesLikePyannoteCore) {
  // Empty uri: <NA>, as `uri if uri else "<NA>"`.
  EXPECT_EQ(format_rttm_line({"", 1.5, 2.0, "A"}),
            "SPEAKER <NA> 1 1.500 2.000 <NA> <NA> A <NA> <NA>\n");
  // Rounding of the exact double, as Python's `:.3f`: 0.0005 is slightly above its decimal text
  // (rounds up), 1.0005 slightly below (rounds down).
  EXPECT_EQ(format_rttm_line({"f", 1.0005, 0.0005, "A"}),
            "SPEAKER f 1 1.000 0.001 <NA> <NA> A <NA> <NA>\n");
  // Segment.duration is 0 for segments of at most 1 us: a tiny negative duration from
  // end - start arithmetic is written 0.000, not -0.000.
  EXPECT_EQ(format_rttm_line({"f", 3.0, -1e-9, "A"}),
            "SPEAKER f 1 3.000 0.000 <NA> <NA> A <NA> <NA>\n");
  const std::vector<Turn> turns = {{"f", 0, 1, "A"}, {"f", 1, 2, "B"}};
  EXPECT_EQ(format_rttm(turns), format_rttm_line(turns[0]) + format_rttm_line(turns[1]));
  EXPECT_EQ(format_rttm({}), "");
}

TEST(Rttm, GroupsTurnsByFile) {
  const std::vector<Turn> turns = {{"b", 0, 1, "x"}, {"a", 2, 1, "y"}, {"b", 5, 1, "z"}};
  const auto by_file = group_by_file(turns);
  ASSERT_EQ(by_file.size(), 2u);
  EXPECT_EQ(by_file.begin()->first, "a");
  EXPECT_EQ(by_file.at("b").size(), 2u);
  EXPECT_EQ(by_file.at("b")[1].speaker, "z");
}

TEST(Rttm, ReadsAmiDebugReference) {
  PARLEY_REQUIRE_SHARED(path, "eval/ami-debug/debug.train.rttm");
  const auto turns = read_rttm(path);
  EXPECT_EQ(turns.size(), 77u);
  const auto by_file = group_by_file(turns);
  EXPECT_EQ(by_file.size(), 10u);
  const auto& trn00 = by_file.at("trn00");
  EXPECT_TRUE(std::any_of(trn00.begin(), trn00.end(),
                          [](const Turn& turn) { return turn.speaker == "MÉO069"; }));
}

// A time beyond any recording is a damaged file: it once turned a hypothesis into 100 % missed
// speech in `score` and negative timestamps in `fuse`.
TEST(Rttm, RefusesTimesBeyondTheLimit) {
  EXPECT_NE(error_of("SPEAKER a 1 1e308 1 <NA> <NA> s <NA> <NA>\n").find("outside 0 to 1e+07"),
            std::string::npos);
  EXPECT_NE(error_of("SPEAKER a 1 0 2e7 <NA> <NA> s <NA> <NA>\n").find("REF.rttm:1: duration"),
            std::string::npos);
  EXPECT_EQ(error_of("SPEAKER a 1 86400 3600 <NA> <NA> s <NA> <NA>\n"), "no error");
}

// `score --ref /dev/zero` read until memory ran out: devices are refused before reading.
TEST(Rttm, RefusesADeviceInsteadOfAFile) {
  try {
    read_rttm("/dev/zero");
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("'/dev/zero' is not a regular file"),
              std::string::npos)
        << error.what();
  }
}

TEST(Rttm, ConfidenceGoesInColumnNineAndReadsBack) {
  const Turn turn{"meeting", 1.25, 2.5, "Alice"};
  const std::string line = format_rttm_line(turn, 0.8126);
  EXPECT_EQ(line, "SPEAKER meeting 1 1.250 2.500 <NA> <NA> Alice 0.813 <NA>\n");
  const auto turns = parse_rttm(line, "named.rttm");
  ASSERT_EQ(turns.size(), 1u);
  EXPECT_EQ(turns[0], turn);
  // Without a confidence: the bytes every unnamed output and golden holds.
  EXPECT_EQ(format_rttm_line(turn, std::nullopt), format_rttm_line(turn));
  EXPECT_EQ(format_rttm_line(turn), "SPEAKER meeting 1 1.250 2.500 <NA> <NA> Alice <NA> <NA>\n");
  EXPECT_EQ(format_rttm_line(turn, 0.0),
            "SPEAKER meeting 1 1.250 2.500 <NA> <NA> Alice 0.000 <NA>\n");
  EXPECT_THROW(format_rttm_line(turn, std::numeric_limits<double>::quiet_NaN()), Error);
}

}  // namespace
}  // namespace parley::eval
