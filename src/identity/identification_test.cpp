#include "identity/identification.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "frames/output.h"
#include "frames/segments.h"
#include "identity/centroids_test_support.h"
#include "identity/voiceprint.h"

namespace parley::identity {
namespace {

using testing::result_with_centroids;

// A unit vector at `degrees` from (1, 0) in the first two of three dimensions.
std::vector<float> at_angle(double degrees) {
  const double radians = degrees * std::acos(-1.0) / 180.0;
  return {static_cast<float>(std::cos(radians)), static_cast<float>(std::sin(radians)), 0.0f};
}

TEST(Identification, CosineIsScaleFreeAndNaNForZero) {
  const std::vector<float> a = {1, 2, 3};
  const std::vector<float> b = {2, 4, 6};
  EXPECT_NEAR(cosine_similarity(a, b), 1.0, 1e-12);
  const std::vector<float> zero = {0, 0, 0};
  EXPECT_TRUE(std::isnan(cosine_similarity(a, zero)));
  const std::vector<float> shorter = {1, 2};
  EXPECT_THROW(cosine_similarity(a, shorter), Error);
}

TEST(Identification, NamesMatchingClustersAndLeavesTheOthers) {
  auto result = result_with_centroids({at_angle(0), at_angle(90), {0, 0, 1}});
  const std::vector<Candidate> library = {{"Bob", {at_angle(85)}}, {"Alice", {at_angle(5)}}};
  const Identification identification = identify(result, library, 0.5);
  ASSERT_EQ(identification.named.size(), 2u);
  EXPECT_EQ(identification.named[0].label, "SPEAKER_00");
  EXPECT_EQ(identification.named[0].name, "Alice");
  EXPECT_NEAR(identification.named[0].score, std::cos(5.0 * std::acos(-1.0) / 180.0), 1e-6);
  EXPECT_EQ(identification.named[1].name, "Bob");
  EXPECT_EQ(result.turns[0].speaker, "Alice");
  EXPECT_EQ(result.turns[1].speaker, "Bob");
  EXPECT_EQ(result.turns[2].speaker, "SPEAKER_02");
  EXPECT_EQ(result.exclusive_turns[0].speaker, "Alice");
}

TEST(Identification, AssignmentIsExclusiveAndOptimal) {
  // Both clusters are closest to Alice; greedy would give her to cluster 0 (0.99) and leave
  // cluster 1 with Bob below the threshold. The optimum gives cluster 1 to Alice and cluster 0 to
  // Bob: 2 matches instead of 1.
  const NdArray<double> scores({2, 2}, std::vector<double>{0.99, 0.80, 0.95, 0.10});
  const auto matches = exclusive_matches(scores, 0.5);
  ASSERT_EQ(matches.size(), 2u);
  EXPECT_EQ(matches[0].row, 0u);
  EXPECT_EQ(matches[0].column, 1u);
  EXPECT_EQ(matches[1].row, 1u);
  EXPECT_EQ(matches[1].column, 0u);
  // One name, two clusters above the threshold: only the better cluster gets it.
  const NdArray<double> one_name({2, 1}, std::vector<double>{0.7, 0.9});
  const auto single = exclusive_matches(one_name, 0.5);
  ASSERT_EQ(single.size(), 1u);
  EXPECT_EQ(single[0].row, 1u);
  EXPECT_NEAR(single[0].confidence, 0.2, 1e-12);  // 0.9 against the rival cluster's 0.7
}

TEST(Identification, ThresholdEdges) {
  const double threshold = 0.6;
  // Exactly at the threshold matches; a hair below does not.
  const NdArray<double> at({1, 1}, std::vector<double>{0.6});
  ASSERT_EQ(exclusive_matches(at, threshold).size(), 1u);
  EXPECT_EQ(exclusive_matches(at, threshold)[0].confidence, 0.0);
  const NdArray<double> below({1, 1}, std::vector<double>{std::nextafter(0.6, 0.0)});
  EXPECT_TRUE(exclusive_matches(below, threshold).empty());
  // NaN (a zero centroid) never matches, nor stops the others from matching.
  const NdArray<double> nan({2, 1},
                            std::vector<double>{std::numeric_limits<double>::quiet_NaN(), 0.9});
  const auto matches = exclusive_matches(nan, threshold);
  ASSERT_EQ(matches.size(), 1u);
  EXPECT_EQ(matches[0].row, 1u);
  // Nothing to match against.
  EXPECT_TRUE(exclusive_matches(NdArray<double>({3, 0}), threshold).empty());
  // A threshold of -1 matches everything it can; above 1 nothing.
  const NdArray<double> any({1, 1}, std::vector<double>{-0.99});
  EXPECT_EQ(exclusive_matches(any, -1.0).size(), 1u);
  const NdArray<double> best({1, 1}, std::vector<double>{1.0});
  EXPECT_TRUE(exclusive_matches(best, 1.0001).empty());
}

TEST(Identification, BestVoiceprintOfANameCounts) {
  auto result = result_with_centroids({at_angle(0)});
  const std::vector<Candidate> library = {{"Alice", {at_angle(80), at_angle(10)}}};
  const auto scores = score_matrix(result.speaker_embeddings, library);
  EXPECT_NEAR(scores(0, 0), std::cos(10.0 * std::acos(-1.0) / 180.0), 1e-6);
}

TEST(Identification, ConfidenceIsTheMarginOverTheBestRival) {
  const NdArray<double> scores({1, 2}, std::vector<double>{0.9, 0.75});
  const auto matches = exclusive_matches(scores, 0.5);
  ASSERT_EQ(matches.size(), 1u);
  EXPECT_NEAR(matches[0].confidence, 0.15, 1e-12);
  const NdArray<double> alone({1, 1}, std::vector<double>{0.9});
  EXPECT_NEAR(exclusive_matches(alone, 0.5)[0].confidence, 0.4, 1e-12);
}

TEST(Identification, RefusesVoiceprintsOfAnotherModel) {
  const std::string ours(64, 'a');
  const std::string theirs(64, 'b');
  const std::vector<LibraryEntry> entries = {
      {1, "Alice", {{1, 0, 0}, ours, "shared"}, "a.wav", ""},
      {2, "Bob", {{0, 1, 0}, theirs, "shared"}, "b.wav", ""}};
  try {
    library_candidates(entries, ours);
    FAIL() << "a voiceprint of another model was accepted";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("voiceprint 2 of Bob"), std::string::npos);
    EXPECT_NE(std::string(error.what()).find("another embedding model"), std::string::npos);
  }
  const auto candidates = library_candidates(std::span(entries).first(1), ours);
  ASSERT_EQ(candidates.size(), 1u);
  EXPECT_EQ(candidates[0].name, "Alice");
}

TEST(Identification, JsonCarriesNamesAndScores) {
  auto result = result_with_centroids({at_angle(0), at_angle(90)});
  const std::vector<Candidate> library = {{"Alice", {at_angle(0)}}};
  const Identification identification = identify(result, library, 0.5);
  const std::string document = add_identification_json(
      frames::format_json(result.turns, result.exclusive_turns, result.speaker_embeddings),
      identification);
  const auto parsed = nlohmann::json::parse(document);
  EXPECT_EQ(parsed["diarization"][0]["speaker"], "Alice");
  EXPECT_EQ(parsed["diarization"][1]["speaker"], "SPEAKER_01");
  EXPECT_TRUE(parsed["speaker_embeddings"].contains("Alice"));
  EXPECT_TRUE(parsed["speaker_embeddings"].contains("SPEAKER_01"));
  EXPECT_FALSE(parsed["speaker_embeddings"].contains("SPEAKER_00"));
  EXPECT_EQ(parsed["identification"]["threshold"], 0.5);
  ASSERT_EQ(parsed["identification"]["speakers"].size(), 1u);
  EXPECT_EQ(parsed["identification"]["speakers"][0]["label"], "SPEAKER_00");
  EXPECT_EQ(parsed["identification"]["speakers"][0]["name"], "Alice");
  EXPECT_NEAR(parsed["identification"]["speakers"][0]["score"].get<double>(), 1.0, 1e-6);
}

TEST(Identification, ASpeakerWithoutCentroidIsReportedWithItsReason) {
  // SPEAKER_01 is what pyannote pads for a speaker without clean speech: zeros.
  auto result = result_with_centroids({at_angle(0), {0, 0, 0}, at_angle(90)});
  const std::vector<Candidate> library = {{"Alice", {at_angle(0)}}, {"Bob", {at_angle(90)}}};
  const Identification identification = identify(result, library, 0.5);
  ASSERT_EQ(identification.named.size(), 2u);
  EXPECT_EQ(identification.named[1].label, "SPEAKER_02");
  ASSERT_EQ(identification.unidentifiable.size(), 1u);
  EXPECT_EQ(identification.unidentifiable[0].label, "SPEAKER_01");
  EXPECT_NE(identification.unidentifiable[0].reason.find("no clean (single-speaker) speech"),
            std::string::npos);
  // Its turns keep their label.
  EXPECT_EQ(result.turns[1].speaker, "SPEAKER_01");
  const auto parsed = nlohmann::json::parse(add_identification_json(
      frames::format_json(result.turns, result.exclusive_turns, result.speaker_embeddings),
      identification));
  ASSERT_EQ(parsed["identification"]["unidentifiable"].size(), 1u);
  EXPECT_EQ(parsed["identification"]["unidentifiable"][0]["label"], "SPEAKER_01");
  EXPECT_EQ(parsed["identification"]["unidentifiable"][0]["reason"],
            identification.unidentifiable[0].reason);
}

TEST(Identification, EveryComparableSpeakerLeavesNoUnidentifiableList) {
  auto result = result_with_centroids({at_angle(0)});
  const Identification identification = identify(result, {}, 0.5);
  EXPECT_TRUE(identification.unidentifiable.empty());
  const auto parsed = nlohmann::json::parse(add_identification_json(
      frames::format_json(result.turns, result.exclusive_turns, result.speaker_embeddings),
      identification));
  EXPECT_FALSE(parsed["identification"].contains("unidentifiable"));
}

TEST(Identification, WhyNotComparable) {
  EXPECT_EQ(why_not_comparable(at_angle(30)), "");
  EXPECT_NE(why_not_comparable(std::vector<float>{0, 0, 0}), "");
  EXPECT_NE(why_not_comparable(std::vector<float>{}), "");
  EXPECT_NE(why_not_comparable(std::vector<float>{1, std::numeric_limits<float>::infinity(), 0}),
            "");
  // A tiny but nonzero centroid still has a direction.
  EXPECT_EQ(why_not_comparable(std::vector<float>{0, 1e-30f, 0}), "");
}

TEST(Identification, AZeroCentroidGivesNoVoiceprint) {
  const std::string document =
      R"({"speaker_embeddings": {"SPEAKER_00": [0.5, 0.25], "SPEAKER_01": [0.0, 0.0]}})";
  const std::string digest(64, 'a');
  EXPECT_EQ(voiceprint_from_result_json(document, "SPEAKER_00", digest, "shared").embedding.size(),
            2u);
  try {
    voiceprint_from_result_json(document, "SPEAKER_01", digest, "shared");
    FAIL() << "a zero centroid became a voiceprint";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("SPEAKER_01 cannot give a voiceprint, no centroid"),
              std::string::npos)
        << error.what();
  }
}

TEST(Identification, ANamedSpeakerIsFoundByItsLabel) {
  // As add_identification_json writes it: the embedding keyed by the name.
  const std::string document = R"({"speaker_embeddings": {"Bob": [0.5, 0.25], "SPEAKER_01": [1, 2]},
      "identification": {"threshold": 0.5, "speakers": [{"label": "SPEAKER_00", "name": "Bob",
      "score": 0.9, "confidence": 0.4}]}})";
  const std::string digest(64, 'a');
  EXPECT_EQ(voiceprint_from_result_json(document, "SPEAKER_00", digest, "shared").embedding,
            (std::vector<float>{0.5f, 0.25f}));
  EXPECT_EQ(voiceprint_from_result_json(document, "Bob", digest, "shared").embedding,
            (std::vector<float>{0.5f, 0.25f}));
  EXPECT_EQ(voiceprint_from_result_json(document, "SPEAKER_01", digest, "shared").embedding,
            (std::vector<float>{1.0f, 2.0f}));
  EXPECT_THROW(voiceprint_from_result_json(document, "SPEAKER_02", digest, "shared"), Error);
}

TEST(Identification, OneSpeakerResultGivesItsVoiceprint) {
  const std::string digest(64, 'a');
  const auto voiceprint = voiceprint_from_one_speaker_json(
      R"({"speaker_embeddings": {"Alice": [0.5, 0.25]}})", "clip.wav", digest, "shared");
  EXPECT_EQ(voiceprint.embedding, (std::vector<float>{0.5f, 0.25f}));
  EXPECT_EQ(voiceprint.model_digest, digest);
  const auto message = [&](const std::string& document) {
    try {
      voiceprint_from_one_speaker_json(document, "clip.wav", digest, "shared");
    } catch (const Error& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(R"({"speaker_embeddings": {}})").find("clip.wav: no speech found"),
            std::string::npos);
  EXPECT_NE(message(R"({"speaker_embeddings": {"SPEAKER_00": [0, 0]}})").find("talks alone"),
            std::string::npos);
  EXPECT_NE(message(R"({"speaker_embeddings": {"A": [1], "B": [2]}})").find("2 speakers"),
            std::string::npos);
  EXPECT_NE(message("not json").find("not a diarization result"), std::string::npos);
}

}  // namespace
}  // namespace parley::identity
