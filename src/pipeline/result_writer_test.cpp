#include "pipeline/result_writer.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace parley::pipeline {
namespace {

ResultFormatOptions options(bool exclusive, std::string uri = "",
                            const transcript::Transcript* words = nullptr) {
  ResultFormatOptions options;
  options.exclusive = exclusive;
  options.uri = std::move(uri);
  options.transcript = words;
  return options;
}

DiarizationResult two_speakers() {
  DiarizationResult result;
  result.uri = "clip";
  result.turns = {{0.5, 2.0, "SPEAKER_00", 0, 0}, {1.5, 3.25, "SPEAKER_01", 1, 1}};
  result.exclusive_turns = {{0.5, 1.5, "SPEAKER_00", 0, 0}, {1.5, 3.25, "SPEAKER_01", 1, 1}};
  result.speaker_count = 2;
  return result;
}

TEST(ResultWriter, EveryFormatWithAndWithoutExclusive) {
  const DiarizationResult result = two_speakers();
  EXPECT_EQ(format_result(result, "rttm"),
            "SPEAKER clip 1 0.500 1.500 <NA> <NA> SPEAKER_00 <NA> <NA>\n"
            "SPEAKER clip 1 1.500 1.750 <NA> <NA> SPEAKER_01 <NA> <NA>\n");
  EXPECT_EQ(format_result(result, "rttm", options(true, "other")),
            "SPEAKER other 1 0.500 1.000 <NA> <NA> SPEAKER_00 <NA> <NA>\n"
            "SPEAKER other 1 1.500 1.750 <NA> <NA> SPEAKER_01 <NA> <NA>\n");
  EXPECT_EQ(format_result(result, "txt"), "0.500 2.000 SPEAKER_00\n1.500 3.250 SPEAKER_01\n");
  EXPECT_EQ(format_result(result, "txt", options(true)),
            "0.500 1.500 SPEAKER_00\n1.500 3.250 SPEAKER_01\n");
  EXPECT_EQ(format_result(result, "srt", options(true)),
            "1\n00:00:00,500 --> 00:00:01,500\nSPEAKER_00\n\n"
            "2\n00:00:01,500 --> 00:00:03,250\nSPEAKER_01\n\n");
  EXPECT_EQ(format_result(result, "vtt"),
            "WEBVTT\n\n00:00:00.500 --> 00:00:02.000\nSPEAKER_00\n\n"
            "00:00:01.500 --> 00:00:03.250\nSPEAKER_01\n\n");
  // json holds both kinds of turns whatever `exclusive` says.
  EXPECT_EQ(format_result(result, "json"), format_result(result, "json", options(true)));
  const auto json = nlohmann::json::parse(format_result(result, "json"));
  EXPECT_EQ(json["diarization"].size(), 2u);
  EXPECT_EQ(json["exclusive_diarization"][0]["end"], 1.5);
  EXPECT_FALSE(json.contains("transcript"));
}

TEST(ResultWriter, TranscriptTakesTheSpeakersOfTheExclusiveTurns) {
  const DiarizationResult result = two_speakers();
  const transcript::Transcript words = {{0.6, 1.2, "hello there", {}, {}},
                                        {2.0, 3.0, "general kenobi", {}, {}}};
  const transcript::Transcript labelled = label_transcript(result, words);
  ASSERT_EQ(labelled.size(), 2u);
  EXPECT_EQ(labelled[1].speaker, "SPEAKER_01");
  const ResultFormatOptions fused = options(false, "", &labelled);
  EXPECT_EQ(format_result(result, "srt", fused),
            "1\n00:00:00,600 --> 00:00:01,200\nSPEAKER_00: hello there\n\n"
            "2\n00:00:02,000 --> 00:00:03,000\nSPEAKER_01: general kenobi\n\n");
  const auto json = nlohmann::json::parse(format_result(result, "json", fused));
  EXPECT_EQ(json["transcript"][1]["speaker"], "SPEAKER_01");
  EXPECT_EQ(json["diarization"].size(), 2u);
  // RTTM has no place for words: the turns, as without a transcript.
  EXPECT_EQ(format_result(result, "rttm", fused), format_result(result, "rttm"));
}

TEST(ResultWriter, UnknownFormatNamesTheFormats) {
  try {
    format_result(two_speakers(), "docx");
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(), "format 'docx': expected one of rttm, json, txt, srt, vtt");
  }
  EXPECT_TRUE(is_result_format("vtt"));
  EXPECT_FALSE(is_result_format("VTT"));
}

// The check every face relies on (the C API and Python show this message, named by their call).
TEST(ResultWriter, RttmRefusesAUriItCannotHoldEvenWithoutTurns) {
  for (const std::string uri : {"a b", "tab\there", "line\nbreak"}) {
    ResultFormatOptions options;
    options.uri = uri;
    for (const DiarizationResult& result : {two_speakers(), DiarizationResult{}}) {
      try {
        format_result(result, "rttm", options);
        ADD_FAILURE() << "accepted '" << uri << "'";
      } catch (const Error& error) {
        EXPECT_EQ(std::string(error.what()),
                  "uri '" + uri +
                      "' holds whitespace or control characters, which RTTM cannot represent; "
                      "pass a name without them");
      }
    }
  }
  ResultFormatOptions fine;
  fine.uri = "fine";
  EXPECT_EQ(format_result(DiarizationResult{}, "rttm", fine), "");
}

// SPEAKER_00 named Alice: its turns carry the name, and its scores go where each format has room.
DiarizationResult alice_and_one_unnamed() {
  DiarizationResult result = two_speakers();
  for (auto* turns : {&result.turns, &result.exclusive_turns}) (*turns)[0].speaker = "Alice";
  return result;
}

TEST(ResultWriter, NamedSpeakersCarryTheirScoresInEveryFormat) {
  const DiarizationResult result = alice_and_one_unnamed();
  const std::vector<SpeakerScore> scores = {{"Alice", 0.8126, 0.2349}};
  ResultFormatOptions scored = options(true);
  scored.speaker_scores = scores;
  EXPECT_EQ(format_result(result, "rttm", scored),
            "SPEAKER clip 1 0.500 1.000 <NA> <NA> Alice 0.235 <NA>\n"
            "SPEAKER clip 1 1.500 1.750 <NA> <NA> SPEAKER_01 <NA> <NA>\n");
  EXPECT_EQ(format_result(result, "txt", scored),
            "0.500 1.500 Alice (0.81)\n1.500 3.250 SPEAKER_01\n");
  EXPECT_EQ(format_result(result, "srt", scored),
            "1\n00:00:00,500 --> 00:00:01,500\nAlice (0.81)\n\n"
            "2\n00:00:01,500 --> 00:00:03,250\nSPEAKER_01\n\n");
  EXPECT_EQ(format_result(result, "vtt", scored),
            "WEBVTT\n\n00:00:00.500 --> 00:00:01.500\nAlice (0.81)\n\n"
            "00:00:01.500 --> 00:00:03.250\nSPEAKER_01\n\n");
  // json keeps plain labels: its identification object (identity/) holds the scores.
  EXPECT_EQ(format_result(result, "json", scored), format_result(result, "json"));
  // Without scores a named result is written as before, byte for byte.
  EXPECT_EQ(format_result(result, "rttm"),
            "SPEAKER clip 1 0.500 1.500 <NA> <NA> Alice <NA> <NA>\n"
            "SPEAKER clip 1 1.500 1.750 <NA> <NA> SPEAKER_01 <NA> <NA>\n");
  EXPECT_EQ(scored_label("SPEAKER_01", scores), "SPEAKER_01");
}

TEST(ResultWriter, AFusedTranscriptTagsTheNamedSpeakers) {
  const DiarizationResult result = alice_and_one_unnamed();
  const transcript::Transcript words = {{0.6, 1.2, "hello there", {}, {}},
                                        {2.0, 3.0, "general kenobi", {}, {}}};
  const transcript::Transcript labelled = label_transcript(result, words);
  const std::vector<SpeakerScore> scores = {{"Alice", 0.8126, 0.2349}};
  ResultFormatOptions fused = options(false, "", &labelled);
  fused.speaker_scores = scores;
  EXPECT_EQ(format_result(result, "srt", fused),
            "1\n00:00:00,600 --> 00:00:01,200\nAlice (0.81): hello there\n\n"
            "2\n00:00:02,000 --> 00:00:03,000\nSPEAKER_01: general kenobi\n\n");
  EXPECT_EQ(format_result(result, "txt", fused),
            "[00:00:00] Alice (0.81): hello there\n[00:00:02] SPEAKER_01: general kenobi\n");
  EXPECT_NE(format_result(result, "vtt", fused).find("Alice (0.81): hello there"),
            std::string::npos);
  const auto json = nlohmann::json::parse(format_result(result, "json", fused));
  EXPECT_EQ(json["transcript"][0]["speaker"], "Alice");
  EXPECT_EQ(format_result(result, "rttm", fused).substr(0, 54),
            "SPEAKER clip 1 0.500 1.500 <NA> <NA> Alice 0.235 <NA>\n");
}

}  // namespace
}  // namespace parley::pipeline
