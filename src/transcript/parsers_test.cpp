#include <set>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.h"
#include "transcript/parsers.h"
#include "transcript/transcript.h"

namespace parley::transcript {
namespace {

using ::testing::HasSubstr;

// The message parse_transcript fails with, or "" when it succeeds.
std::string parse_error(std::string_view text, TranscriptFormat format) {
  try {
    parse_transcript(text, format, "t");
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

TEST(SrtTest, ReadsCuesWithMultipleLinesAndMarkup) {
  const Transcript transcript = parse_srt(
      "\xEF\xBB\xBF"
      "1\r\n00:00:01,000 --> 00:00:02,500\r\nHello <i>there</i>\r\nfriend\r\n\r\n"
      "2\n00:01:02.250 --> 00:01:03,000\nA &amp; B\n",
      "t.srt");
  ASSERT_EQ(transcript.size(), 2u);
  EXPECT_DOUBLE_EQ(transcript[0].start, 1.0);
  EXPECT_DOUBLE_EQ(transcript[0].end, 2.5);
  EXPECT_EQ(transcript[0].text, "Hello there friend");
  EXPECT_TRUE(transcript[0].words.empty());
  EXPECT_DOUBLE_EQ(transcript[1].start, 62.25);
  EXPECT_EQ(transcript[1].text, "A & B");
}

TEST(SrtTest, CueWithoutBlankLineBeforeTheNextStillEnds) {
  const Transcript transcript = parse_srt(
      "1\n00:00:01,000 --> 00:00:02,000\nfirst\n2\n00:00:03,000 --> 00:00:04,000\n"
      "second\n00:00:05,000 --> 00:00:06,000\nthird\n",
      "t.srt");
  ASSERT_EQ(transcript.size(), 3u);
  EXPECT_EQ(transcript[0].text, "first");
  EXPECT_EQ(transcript[1].text, "second");
  EXPECT_DOUBLE_EQ(transcript[2].start, 5.0);
  EXPECT_EQ(transcript[2].text, "third");
}

TEST(SrtTest, MalformedInputNamesTheLine) {
  EXPECT_THAT(parse_error("1\n00:00:01,000 --> 00:00:02,000\nok\n\nhello\n", TranscriptFormat::srt),
              HasSubstr("t:5: expected a cue number or a timing line"));
  EXPECT_THAT(
      parse_error("1\n00:00:01,000 --> 00:00:02,000\nok\n\n2\ntext\n", TranscriptFormat::srt),
      HasSubstr("t:5: cue 2 has no timing line"));
  EXPECT_THAT(parse_error("1\n00:00:01,000 --> 00:0x:02,000\nok\n", TranscriptFormat::srt),
              HasSubstr("t:2: end time '00:0x:02,000' is not a SRT timestamp"));
  EXPECT_THAT(parse_error("1\n00:00:61,000 --> 00:01:02,000\nok\n", TranscriptFormat::srt),
              HasSubstr("t:2: start time '00:00:61,000'"));
  EXPECT_THAT(parse_error("\n\n1\n00:00:05,000 --> 00:00:02,000\nok\n", TranscriptFormat::srt),
              HasSubstr("t:4: cue ends (00:00:02,000) before it starts (00:00:05,000)"));
}

TEST(WebVttTest, ReadsCuesSkippingHeaderNotesAndSettings) {
  const Transcript transcript = parse_webvtt(
      "WEBVTT - demo\nKind: captions\n\nNOTE a comment\nspanning lines\n\n"
      "intro\n00:01.500 --> 00:02.000 align:start position:10%\n<v Alice>Hi</v> all\n\n"
      "01:00:00.000 --> 01:00:01.000\nbye\n",
      "t.vtt");
  ASSERT_EQ(transcript.size(), 2u);
  EXPECT_DOUBLE_EQ(transcript[0].start, 1.5);
  EXPECT_DOUBLE_EQ(transcript[0].end, 2.0);
  EXPECT_EQ(transcript[0].text, "Hi all");
  EXPECT_DOUBLE_EQ(transcript[1].start, 3600.0);
}

TEST(WebVttTest, MalformedInputNamesTheLine) {
  EXPECT_THAT(parse_error("1\n00:00:01,000 --> 00:00:02,000\nok\n", TranscriptFormat::webvtt),
              HasSubstr("t:1: a WebVTT file starts with the line 'WEBVTT'"));
  EXPECT_THAT(parse_error("WEBVTT\n\nid\nnot timing\n", TranscriptFormat::webvtt),
              HasSubstr("t:3: expected a cue timing line"));
  EXPECT_THAT(parse_error("WEBVTT\n\n00:01.000 --> 00:00.500\nx\n", TranscriptFormat::webvtt),
              HasSubstr("t:3: cue ends"));
  EXPECT_THAT(parse_error("WEBVTT\n\n00:01.000 --> soon\nx\n", TranscriptFormat::webvtt),
              HasSubstr("t:3: end time 'soon' is not a WebVTT timestamp"));
}

TEST(CtmTest, GroupsWordsIntoSegmentsAtPauses) {
  const Transcript transcript = parse_ctm(
      ";; comment\nrec 1 0.50 0.30 hello 0.9\nrec 1 0.90 0.20 world\nrec 1 5.00 0.40 again\n",
      "t.ctm");
  ASSERT_EQ(transcript.size(), 2u);
  EXPECT_EQ(transcript[0].text, "hello world");
  EXPECT_DOUBLE_EQ(transcript[0].start, 0.5);
  EXPECT_DOUBLE_EQ(transcript[0].end, 1.1);
  ASSERT_EQ(transcript[0].words.size(), 2u);
  EXPECT_EQ(transcript[0].words[1], (Word{0.9, 1.1, "world", std::nullopt}));
  EXPECT_EQ(transcript[1].text, "again");
}

TEST(CtmTest, MalformedInputNamesTheLine) {
  EXPECT_THAT(parse_error("rec 1 0.5 0.3\n", TranscriptFormat::ctm),
              HasSubstr("t:1: a CTM line has at least 5 fields"));
  EXPECT_THAT(parse_error("rec 1 0.5 0.3 a\nrec 1 x 0.3 b\n", TranscriptFormat::ctm),
              HasSubstr("t:2: start time 'x' is not a number"));
  EXPECT_THAT(parse_error("rec 1 0.5 -0.3 a\n", TranscriptFormat::ctm),
              HasSubstr("t:1: negative duration"));
  EXPECT_THAT(parse_error("rec 1 0.5 0.3 a\n\nother 1 0.9 0.3 b\n", TranscriptFormat::ctm),
              HasSubstr("t:3: words of a second recording 'other'"));
  EXPECT_THAT(parse_error("rec 1 2.5 0.3 a\nrec 1 0.9 0.3 b\n", TranscriptFormat::ctm),
              HasSubstr("t:2: word starts at 0.9 s, before the previous word"));
}

constexpr const char* kWhisperCppFull = R"({
  "result": {"language": "en"},
  "transcription": [
    {
      "timestamps": {"from": "00:00:00,000", "to": "00:00:02,000"},
      "offsets": {"from": 0, "to": 2000},
      "text": " Hello, world.",
      "tokens": [
        {"text": "[_BEG_]", "offsets": {"from": 0, "to": 0}, "id": 50364, "p": 0.9},
        {"text": " Hello", "offsets": {"from": 0, "to": 600}, "id": 1, "p": 0.9},
        {"text": ",", "offsets": {"from": 600, "to": 650}, "id": 2, "p": 0.9},
        {"text": " wor", "offsets": {"from": 800, "to": 1200}, "id": 3, "p": 0.9},
        {"text": "ld.", "offsets": {"from": 1200, "to": 1900}, "id": 4, "p": 0.9},
        {"text": "[_TT_100]", "offsets": {"from": 2000, "to": 2000}, "id": 50464, "p": 0.9}
      ]
    },
    {
      "offsets": {"from": 2500, "to": 4000},
      "text": " Bye."
    }
  ]
})";

TEST(WhisperCppJsonTest, ReadsSegmentsAndMergesTokensIntoWords) {
  const Transcript transcript = parse_whisper_cpp_json(kWhisperCppFull, "t.json");
  ASSERT_EQ(transcript.size(), 2u);
  EXPECT_EQ(transcript[0].text, "Hello, world.");
  EXPECT_DOUBLE_EQ(transcript[0].end, 2.0);
  ASSERT_EQ(transcript[0].words.size(), 2u);
  EXPECT_EQ(transcript[0].words[0], (Word{0.0, 0.65, "Hello,", std::nullopt}));
  EXPECT_EQ(transcript[0].words[1], (Word{0.8, 1.9, "world.", std::nullopt}));
  EXPECT_DOUBLE_EQ(transcript[1].start, 2.5);
  EXPECT_TRUE(transcript[1].words.empty());
  EXPECT_EQ(detect_transcript_format(kWhisperCppFull, "x.txt"), TranscriptFormat::whisper_cpp_json);
}

TEST(WhisperCppJsonTest, JoinsCharactersThatTokensCutInTwo) {
  // "你好" is E4 BD A0 E5 A5 BD; whisper.cpp wrote the token pieces byte for byte.
  const std::string text =
      "{\"transcription\": [{\"offsets\": {\"from\": 0, \"to\": 900}, \"text\": \" "
      "\xE4\xBD\xA0\xE5\xA5\xBD\",\n"
      "\"tokens\": [{\"text\": \" \xE4\xBD\", \"offsets\": {\"from\": 0, \"to\": 300}},\n"
      "{\"text\": \"\xA0\xE5\xA5\xBD\", \"offsets\": {\"from\": 300, \"to\": 900}},\n"
      "{\"text\": \" \xE5\", \"offsets\": {\"from\": 900, \"to\": 950}}]}]}";
  const Transcript transcript = parse_whisper_cpp_json(text, "t.json");
  ASSERT_EQ(transcript.size(), 1u);
  EXPECT_EQ(transcript[0].text, "\xE4\xBD\xA0\xE5\xA5\xBD");
  ASSERT_EQ(transcript[0].words.size(), 2u);
  EXPECT_EQ(transcript[0].words[0], (Word{0.0, 0.9, "\xE4\xBD\xA0\xE5\xA5\xBD", std::nullopt}));
  // A piece that never meets its other half stays the raw byte.
  EXPECT_EQ(transcript[0].words[1].text, "\xE5");
  // Line numbers still count the original lines.
  EXPECT_THAT(parse_error(text.substr(0, text.size() - 4), TranscriptFormat::whisper_cpp_json),
              HasSubstr("t:4: not valid JSON"));
}

TEST(WhisperCppJsonTest, MalformedInputSaysWhere) {
  EXPECT_THAT(parse_error("{\n \"transcription\": [\n  {\"text\": \"a\",\n",
                          TranscriptFormat::whisper_cpp_json),
              HasSubstr("t:4: not valid JSON"));
  EXPECT_THAT(parse_error("{\"result\": {}}", TranscriptFormat::whisper_cpp_json),
              HasSubstr("t: the top level has no \"transcription\""));
  EXPECT_THAT(parse_error("{\"transcription\": [\n{\"offsets\": {\"from\": 0, \"to\": 10}, "
                          "\"text\": \"a\"},\n{\"text\": \"b\"}]}",
                          TranscriptFormat::whisper_cpp_json),
              HasSubstr("t: /transcription/1 has no \"offsets\""));
  EXPECT_THAT(parse_error("{\"transcription\": [{\"offsets\":\n {\"from\": \"zero\", \"to\": 10}, "
                          "\"text\": \"a\"}]}",
                          TranscriptFormat::whisper_cpp_json),
              HasSubstr("t: /transcription/0/offsets/from is not a number"));
}

constexpr const char* kOpenAi = R"({"text": "Hi there. Yes.", "segments": [
  {"id": 0, "start": 0.0, "end": 1.5, "text": " Hi there.",
   "words": [{"word": " Hi", "start": 0.0, "end": 0.4, "probability": 0.9},
             {"word": " there.", "start": 0.5, "end": 1.4, "probability": 0.9}]},
  {"id": 1, "start": 2.0, "end": 2.6, "text": " Yes 2.",
   "words": [{"word": "Yes", "start": 2.0, "end": 2.3}, {"word": "2."}]}
]})";

TEST(OpenAiJsonTest, ReadsSegmentsAndWords) {
  const Transcript transcript = parse_openai_json(kOpenAi, "t.json");
  ASSERT_EQ(transcript.size(), 2u);
  EXPECT_EQ(transcript[0].text, "Hi there.");
  ASSERT_EQ(transcript[0].words.size(), 2u);
  EXPECT_EQ(transcript[0].words[1], (Word{0.5, 1.4, "there.", std::nullopt}));
  // A word without times (whisperX) sits at the end of the word before it.
  EXPECT_EQ(transcript[1].words[1], (Word{2.3, 2.3, "2.", std::nullopt}));
  EXPECT_EQ(detect_transcript_format(kOpenAi, "x"), TranscriptFormat::openai_json);
  // A bare list of segments works too.
  EXPECT_EQ(parse_openai_json(R"([{"start": 1, "end": 2, "text": "x"}])", "t").size(), 1u);
}

TEST(OpenAiJsonTest, MalformedInputSaysWhere) {
  EXPECT_THAT(parse_error("{\"segments\": [\n{\"start\": 0, \"end\": 1, \"text\": \"a\"},\n"
                          "{\"start\": 1, \"text\": \"b\"}\n]}",
                          TranscriptFormat::openai_json),
              HasSubstr("t: /segments/1 has no \"end\""));
  EXPECT_THAT(parse_error("{\"segments\": [{\"start\": 2, \"end\": 1,\n \"text\": \"a\"}]}",
                          TranscriptFormat::openai_json),
              HasSubstr("t: /segments/0 ends (1 s) before it starts (2 s)"));
  EXPECT_THAT(
      parse_error("{\"segments\": [{\"start\": 0, \"end\": 1, \"text\": \"a\",\n"
                  "\"words\": [\n{\"word\": \"a\", \"start\": -1, \"end\": 1}]}]}",
                  TranscriptFormat::openai_json),
      HasSubstr("t: /segments/0/words/0/start is -1; times must be from 0 to 1e+07 seconds"));
  EXPECT_THAT(parse_error("{\"segments\": [{\"start\": 0, \"end\": 1, \"text\": \"a\",\n"
                          "\"words\": [{\"word\": \"a\",\n \"start\": 0}]}]}",
                          TranscriptFormat::openai_json),
              HasSubstr("t: /segments/0/words/0 has only one of"));
  EXPECT_THAT(parse_error("{\"segments\": 3}", TranscriptFormat::openai_json),
              HasSubstr("t: /segments is not an array"));
  EXPECT_THAT(parse_error("{\"segments\": [\n\n{\"start\": 0,, }]}", TranscriptFormat::openai_json),
              HasSubstr("t:3: not valid JSON"));
}

TEST(FormatTest, DetectsFromContentThenExtension) {
  EXPECT_EQ(detect_transcript_format("WEBVTT\n\n", "a.srt"), TranscriptFormat::webvtt);
  EXPECT_EQ(detect_transcript_format("1\n00:00:01,000 --> 00:00:02,000\nx\n", "a"),
            TranscriptFormat::srt);
  EXPECT_EQ(detect_transcript_format("rec 1 0.5 0.3 hello\n", "a"), TranscriptFormat::ctm);
  EXPECT_EQ(detect_transcript_format("", "a.CTM"), TranscriptFormat::ctm);
  EXPECT_THROW(detect_transcript_format("hello\n", "a.txt"), Error);
  EXPECT_EQ(parse_transcript_format("vtt"), TranscriptFormat::webvtt);
  EXPECT_THROW(parse_transcript_format("docx"), Error);
  // Every name the option table offers (transcript_format) is a format of its own.
  std::set<TranscriptFormat> named;
  for (const std::string_view name : transcript_format_names()) {
    EXPECT_NO_THROW(named.insert(parse_transcript_format(name))) << name;
  }
  EXPECT_EQ(named.size(), transcript_format_names().size());
}

// Times beyond any recording overflowed the writers' milliseconds (`fuse` printed
// -2562047788015:-12:-55,-808 and "end": -9.2e15): every reader refuses them.
TEST(TranscriptLimits, TimesBeyondTheLimitAreRefused) {
  EXPECT_THAT(
      parse_error("1\n00:00:00,000 --> 9999999999999:00:00,000\nhi\n", TranscriptFormat::srt),
      HasSubstr("t:2: end time"));
  EXPECT_THAT(parse_error("rec 1 0.5 1e300 a\n", TranscriptFormat::ctm),
              HasSubstr("t:1: duration 1e300 is outside 0 to 1e+07 seconds"));
  EXPECT_THAT(parse_error(R"({"transcription":[{"offsets":{"from":0,"to":1e300},"text":"a"}]})",
                          TranscriptFormat::whisper_cpp_json),
              HasSubstr("times must be from 0 to 1e+07 seconds"));
  EXPECT_THAT(parse_error(R"({"segments":[{"start":0,"end":1e300,"text":"a"}]})",
                          TranscriptFormat::openai_json),
              HasSubstr("times must be from 0 to 1e+07 seconds"));
  // 1e999 overflows a double inside nlohmann::json: it was an "internal error".
  EXPECT_THAT(parse_error(R"({"segments":[{"start":0,"end":1e999,"text":"a"}]})",
                          TranscriptFormat::openai_json),
              HasSubstr("t: number overflow parsing '1e999'; times must be from 0 to 1e+07"));
}

// `fuse --transcript /dev/zero` never ended.
TEST(TranscriptLimits, ADeviceIsRefused) { EXPECT_THROW(read_transcript("/dev/zero"), Error); }

}  // namespace
}  // namespace parley::transcript
