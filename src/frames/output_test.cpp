#include "frames/output.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "testing/temporary_directory.h"

namespace parley::frames {
namespace {

const std::vector<Turn> kTurns = {{6.73096875, 6.74784375, "SPEAKER_00", 0},
                                  {6.74784375, 7.03471875, "SPEAKER_01", 1},
                                  {2.0, 3.0004, "SPEAKER_00", 0}};

// Pipeline turns reach RTTM through to_eval_turns and the one writer, eval::format_rttm.
TEST(Output, TurnsBecomeRttmLikePyannote) {
  const std::vector<eval::Turn> converted = to_eval_turns(kTurns, "clip");
  ASSERT_EQ(converted.size(), kTurns.size());
  EXPECT_EQ(converted[0].file_id, "clip");
  EXPECT_EQ(converted[0].start, kTurns[0].start);
  EXPECT_EQ(converted[0].duration, kTurns[0].end - kTurns[0].start);
  EXPECT_EQ(converted[1].speaker, "SPEAKER_01");
  EXPECT_EQ(eval::format_rttm(converted),
            "SPEAKER clip 1 6.731 0.017 <NA> <NA> SPEAKER_00 <NA> <NA>\n"
            "SPEAKER clip 1 6.748 0.287 <NA> <NA> SPEAKER_01 <NA> <NA>\n"
            "SPEAKER clip 1 2.000 1.000 <NA> <NA> SPEAKER_00 <NA> <NA>\n");
  // Annotation.write_rttm writes an empty uri as <NA>.
  EXPECT_EQ(eval::format_rttm(to_eval_turns(std::span(kTurns).first(1), "")),
            "SPEAKER <NA> 1 6.731 0.017 <NA> <NA> SPEAKER_00 <NA> <NA>\n");
  // The duration is end - start rounded by itself, as pyannote writes Segment.duration: this
  // turn's start and end both round to 1.001, yet its duration 0.0008 is written 0.001.
  const std::vector<Turn> short_turn = {{1.0006, 1.0014, "SPEAKER_00", 0}};
  EXPECT_EQ(eval::format_rttm(to_eval_turns(short_turn, "clip")),
            "SPEAKER clip 1 1.001 0.001 <NA> <NA> SPEAKER_00 <NA> <NA>\n");
  EXPECT_THROW(eval::format_rttm(to_eval_turns(kTurns, "my clip")), Error);
  const std::vector<Turn> spaced = {{0.0, 1.0, "A B", 0}};
  EXPECT_THROW(eval::format_rttm(to_eval_turns(spaced, "clip")), Error);
}

TEST(Output, WritesJsonLikeDiarizeOutputSerialize) {
  const std::string json = format_json(kTurns, std::span(kTurns).first(2), NdArray<float>());
  const auto parsed = nlohmann::json::parse(json);
  ASSERT_EQ(parsed.at("diarization").size(), 3u);
  ASSERT_EQ(parsed.at("exclusive_diarization").size(), 2u);
  EXPECT_EQ(parsed["diarization"][0]["start"].get<double>(), 6.731);
  EXPECT_EQ(parsed["diarization"][0]["end"].get<double>(), 6.748);
  EXPECT_EQ(parsed["diarization"][0]["speaker"], "SPEAKER_00");
  EXPECT_EQ(parsed["diarization"][2]["end"].get<double>(), 3.0);  // round(3.0004, 3)
  EXPECT_NE(json.find("\"start\": 6.731,"), std::string::npos) << json;
  // No speaker: no embedding.
  EXPECT_EQ(parsed.at("speaker_embeddings"), nlohmann::json::object());
}

TEST(Output, JsonCarriesOneEmbeddingPerSpeakerThatReadsBackAsTheSameFloats) {
  const NdArray<float> embeddings({2, 3}, {0.1f, -2.5f, 1.0f / 3.0f, 0.0f, 1e-8f, 123456.79f});
  const std::string json = format_json(kTurns, kTurns, embeddings);
  const auto parsed = nlohmann::ordered_json::parse(json);
  const auto& speakers = parsed.at("speaker_embeddings");
  ASSERT_EQ(speakers.size(), 2u);
  EXPECT_EQ(speakers.begin().key(), "SPEAKER_00");  // rows in order, keyed by their label
  ASSERT_EQ(speakers.at("SPEAKER_01").size(), 3u);
  for (std::size_t speaker = 0; speaker < 2; ++speaker) {
    const auto& row = speakers.at(speaker == 0 ? "SPEAKER_00" : "SPEAKER_01");
    for (std::size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(static_cast<float>(row[i].get<double>()), embeddings.data()[speaker * 3 + i]);
    }
  }
  // The float's shortest text, not the 17 digits of its widened double.
  EXPECT_NE(json.find("0.33333334"), std::string::npos) << json;
  EXPECT_EQ(json.find("0.3333333432674408"), std::string::npos) << json;
  EXPECT_NE(json.find("    -2.5,\n"), std::string::npos) << json;
}

TEST(Output, WritesPlainText) {
  EXPECT_EQ(format_text(std::span(kTurns).first(2)),
            "6.731 6.748 SPEAKER_00\n6.748 7.035 SPEAKER_01\n");
}

TEST(Output, WritesFilesAndNamesThePathOnFailure) {
  const parley::testing::TemporaryDirectory temp("output-test");
  const auto path = temp / "out.rttm";
  write_text_file(path, "hello\n");
  std::ifstream stream(path);
  std::stringstream content;
  content << stream.rdbuf();
  EXPECT_EQ(content.str(), "hello\n");
  try {
    write_text_file("/nonexistent-folder/out.rttm", "x");
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("/nonexistent-folder/out.rttm"), std::string::npos);
  }
}

}  // namespace
}  // namespace parley::frames
