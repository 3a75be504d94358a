#include "identity/speaker_linking.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/error.h"
#include "frames/segments.h"

namespace parley::identity {
namespace {

// A synthetic corpus: `people` voices (random unit directions in 64 dimensions, nearly
// orthogonal), each recording a few of them, each time with a little noise.
struct Corpus {
  std::vector<std::vector<float>> voices;
  std::vector<RecordingSpeakers> recordings;
  std::vector<std::vector<std::size_t>> who;  // who[r][s]: the voice of speaker s of recording r
};

std::vector<float> noisy(const std::vector<float>& voice, double noise, std::mt19937& random) {
  std::normal_distribution<double> normal(0.0, noise);
  std::vector<float> result = voice;
  for (float& value : result) value = static_cast<float>(value + normal(random));
  return result;
}

Corpus make_corpus(std::size_t people, std::size_t recordings, double noise, unsigned seed) {
  constexpr std::size_t kDimension = 64;
  std::mt19937 random(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  Corpus corpus;
  for (std::size_t p = 0; p < people; ++p) {
    std::vector<float> voice(kDimension);
    double norm = 0.0;
    for (float& value : voice) {
      value = static_cast<float>(normal(random));
      norm += double{value} * value;
    }
    for (float& value : voice) value = static_cast<float>(value / std::sqrt(norm));
    corpus.voices.push_back(voice);
  }
  for (std::size_t r = 0; r < recordings; ++r) {
    // Two or three distinct voices per recording.
    std::vector<std::size_t> cast;
    const std::size_t count = 2 + r % 2;
    while (cast.size() < count) {
      const std::size_t p = random() % people;
      if (std::find(cast.begin(), cast.end(), p) == cast.end()) cast.push_back(p);
    }
    RecordingSpeakers speakers{
        fmt::format("rec{:04d}", r), NdArray<float>({count, kDimension}), {}};
    for (std::size_t s = 0; s < count; ++s) {
      const auto centroid = noisy(corpus.voices[cast[s]], noise, random);
      std::copy(centroid.begin(), centroid.end(), speakers.centroids.data() + s * kDimension);
      speakers.speech_seconds.push_back(10.0 + static_cast<double>(s));
    }
    corpus.recordings.push_back(std::move(speakers));
    corpus.who.push_back(cast);
  }
  return corpus;
}

TEST(SpeakerLinking, SameVoiceSameLabelAcrossRecordings) {
  const Corpus corpus = make_corpus(6, 40, 0.03, 7);
  const Linking linking = link_speakers(corpus.recordings, kDefaultThreshold);
  EXPECT_EQ(linking.speakers.size(), 6u);
  // The global label is a function of the voice, and the voice of the global label.
  std::map<std::size_t, std::size_t> global_of_voice;
  std::map<std::size_t, std::size_t> voice_of_global;
  for (std::size_t r = 0; r < corpus.recordings.size(); ++r) {
    for (std::size_t s = 0; s < corpus.who[r].size(); ++s) {
      const std::size_t voice = corpus.who[r][s];
      const std::size_t global = linking.global_of[r][s];
      EXPECT_EQ(global_of_voice.emplace(voice, global).first->second, global);
      EXPECT_EQ(voice_of_global.emplace(global, voice).first->second, voice);
    }
  }
  double total = 0.0;
  std::size_t appearances = 0;
  for (const auto& speaker : linking.speakers) {
    total += speaker.speech_seconds;
    appearances += speaker.recordings.size();
  }
  EXPECT_EQ(appearances, 40u / 2u * 2u + 40u / 2u * 3u);
  EXPECT_DOUBLE_EQ(total, 20.0 * (10.0 + 11.0) + 20.0 * (10.0 + 11.0 + 12.0));
  const std::string table = speakers_table(linking);
  EXPECT_EQ(table.rfind("label\tname\trecordings\tspeech_seconds", 0), 0u);
  EXPECT_NE(table.find("GLOBAL_05\t\t"), std::string::npos);
}

TEST(SpeakerLinking, TwoSpeakersOfOneRecordingNeverShareALabel) {
  // The same voice twice in one recording (an over-split speaker): the two stay apart.
  RecordingSpeakers one{
      "split", NdArray<float>({2, 2}, std::vector<float>{1, 0, 0.99f, 0.1f}), {1.0, 2.0}};
  const std::vector<RecordingSpeakers> recordings = {one};
  const Linking linking = link_speakers(recordings, 0.5);
  ASSERT_EQ(linking.speakers.size(), 2u);
  EXPECT_NE(linking.global_of[0][0], linking.global_of[0][1]);
}

TEST(SpeakerLinking, LibraryNamesWinOverGlobalLabels) {
  const Corpus corpus = make_corpus(4, 12, 0.03, 11);
  Linking linking = link_speakers(corpus.recordings, kDefaultThreshold);
  // The library knows the voice of the first recording's first speaker.
  const std::vector<Candidate> library = {{"Alice", {corpus.voices[corpus.who[0][0]]}}};
  name_linked_speakers(linking, library);
  EXPECT_EQ(linking.label(0, 0), "Alice");
  std::size_t named = 0;
  for (const auto& speaker : linking.speakers) named += speaker.name == "Alice";
  EXPECT_EQ(named, 1u);
  // Every recording where that voice speaks carries the name.
  for (std::size_t r = 0; r < corpus.recordings.size(); ++r) {
    for (std::size_t s = 0; s < corpus.who[r].size(); ++s) {
      EXPECT_EQ(linking.label(r, s) == "Alice", corpus.who[r][s] == corpus.who[0][0]);
    }
  }
  EXPECT_NE(speakers_table(linking).find("Alice\tAlice\t"), std::string::npos);
}

TEST(SpeakerLinking, RenamesTurnsOfAResult) {
  pipeline::DiarizationResult result;
  result.uri = "a";
  result.speaker_embeddings = NdArray<float>({2, 2}, std::vector<float>{1, 0, 0, 1});
  result.turns = {
      {0, 1, "SPEAKER_00", 0, 0}, {1, 3, "SPEAKER_01", 1, 1}, {3, 4, "SPEAKER_00", 0, 0}};
  result.exclusive_turns = result.turns;
  const RecordingSpeakers speakers = recording_speakers(result);
  EXPECT_EQ(speakers.speech_seconds, (std::vector<double>{2.0, 2.0}));
  // The same recording twice, under other names: its speakers link.
  RecordingSpeakers again = speakers;
  again.recording = "a-copy";
  const std::vector<RecordingSpeakers> recordings = {speakers, again};
  const Linking linking = link_speakers(recordings, 0.5);
  ASSERT_EQ(linking.speakers.size(), 2u);
  EXPECT_EQ(linking.speakers[0].recordings, (std::vector<std::string>{"a", "a-copy"}));
  apply_linking(linking, 1, result);
  EXPECT_EQ(result.turns[0].speaker, "GLOBAL_00");
  EXPECT_EQ(result.turns[1].speaker, "GLOBAL_01");
  EXPECT_EQ(result.exclusive_turns[2].speaker, "GLOBAL_00");
}

TEST(SpeakerLinking, RefusesEmbeddingsOfAnotherSize) {
  const std::vector<RecordingSpeakers> recordings = {
      {"a", NdArray<float>({1, 2}, std::vector<float>{1, 0}), {1.0}},
      {"b", NdArray<float>({1, 3}, std::vector<float>{1, 0, 0}), {1.0}}};
  EXPECT_THROW(link_speakers(recordings), Error);
}

}  // namespace
}  // namespace parley::identity
