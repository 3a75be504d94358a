#include "identity/named_output.h"

#include <gtest/gtest.h>

#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "frames/segments.h"
#include "identity/centroids_test_support.h"
#include "identity/library_namer.h"

namespace parley::identity {
namespace {

using testing::result_with_centroids;

// SPEAKER_00 is Alice (a voiceprint 0.8 away in cosine), SPEAKER_01 nobody in the library.
struct Named {
  pipeline::DiarizationResult result = result_with_centroids({{1, 0, 0}, {0, 1, 0}});
  Identification identification;
  Named() {
    const std::vector<Candidate> library = {{"Alice", {{0.8f, 0.0f, 0.6f}}}};
    identification = identify(result, library, 0.5);
  }
};

TEST(NamedOutput, EveryFormatCarriesTheNamesAndScores) {
  const Named named;
  ASSERT_EQ(named.identification.named.size(), 1u);
  const double score = named.identification.named[0].score;
  const double confidence = named.identification.named[0].confidence;
  EXPECT_NEAR(score, 0.8, 1e-6);
  EXPECT_EQ(format_identified(named.result, named.identification, "rttm"),
            fmt::format("SPEAKER call 1 0.000 5.000 <NA> <NA> Alice {:.3f} <NA>\n"
                        "SPEAKER call 1 10.000 5.000 <NA> <NA> SPEAKER_01 <NA> <NA>\n",
                        confidence));
  EXPECT_EQ(format_identified(named.result, named.identification, "txt"),
            "0.000 5.000 Alice (0.80)\n10.000 15.000 SPEAKER_01\n");
  EXPECT_NE(format_identified(named.result, named.identification, "srt").find("\nAlice (0.80)\n"),
            std::string::npos);
  EXPECT_NE(format_identified(named.result, named.identification, "vtt").find("\nAlice (0.80)\n"),
            std::string::npos);
  const auto json =
      nlohmann::json::parse(format_identified(named.result, named.identification, "json"));
  EXPECT_EQ(json["identification"]["speakers"][0]["name"], "Alice");
  EXPECT_TRUE(json["speaker_embeddings"].contains("Alice"));
}

TEST(NamedOutput, TheFusedTranscriptJsonHasTheIdentification) {
  const Named named;
  const transcript::Transcript words = {{1.0, 2.0, "hello", {}, {}}, {11.0, 12.0, "hi", {}, {}}};
  const transcript::Transcript labelled = pipeline::label_transcript(named.result, words);
  pipeline::ResultFormatOptions options;
  options.transcript = &labelled;
  const auto json =
      nlohmann::json::parse(format_identified(named.result, named.identification, "json", options));
  EXPECT_EQ(json["identification"]["speakers"][0]["label"], "SPEAKER_00");
  EXPECT_EQ(json["transcript"][0]["speaker"], "Alice");
  EXPECT_EQ(format_identified(named.result, named.identification, "txt", options),
            "[00:00:01] Alice (0.80): hello\n[00:00:11] SPEAKER_01: hi\n");
}

TEST(NamedOutput, WithoutALibraryTheOutputIsAsUnnamed) {
  const LibraryNamer none;
  const pipeline::DiarizationResult result = result_with_centroids({{1, 0, 0}, {0, 1, 0}});
  for (const std::string_view format : pipeline::result_format_names()) {
    EXPECT_EQ(none.format(result, format), pipeline::format_result(result, format)) << format;
  }
  EXPECT_TRUE(none.settings().is_null());
}

TEST(NamedOutput, LinkedOutputCarriesGlobalLabelsAndTheNamesScores) {
  // Two recordings of the same two voices; the first voice is in the library.
  const auto first = result_with_centroids({{1, 0, 0}, {0, 1, 0}});
  const auto second = result_with_centroids({{0, 1, 0}, {1, 0, 0}});
  std::vector<RecordingSpeakers> speakers = {recording_speakers(first), recording_speakers(second)};
  speakers[0].recording = "one";
  speakers[1].recording = "two";
  Linking linking = link_speakers(speakers, 0.5);
  ASSERT_EQ(linking.speakers.size(), 2u);
  name_linked_speakers(linking, std::vector<Candidate>{{"Alice", {{1.0f, 0.0f, 0.0f}}}});
  EXPECT_EQ(format_linked(second, linking, 1, "txt"),
            "0.000 5.000 GLOBAL_01\n10.000 15.000 Alice (1.00)\n");
  const auto json = nlohmann::json::parse(format_linked(second, linking, 1, "json"));
  EXPECT_EQ(json["speaker_linking"]["speakers"][0]["global"], "GLOBAL_01");
  EXPECT_EQ(json["speaker_linking"]["speakers"][1]["name"], "Alice");
  EXPECT_TRUE(json["speaker_embeddings"].contains("GLOBAL_01"));
  EXPECT_EQ(format_linked(first, linking, 0, "rttm").substr(0, 50),
            "SPEAKER call 1 0.000 5.000 <NA> <NA> Alice 0.500 <");
}

}  // namespace
}  // namespace parley::identity
