#include "identity/speaker_library.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "testing/temporary_directory.h"

namespace parley::identity {
namespace {

Voiceprint print(std::vector<float> embedding, char model = 'a') {
  return {std::move(embedding), std::string(64, model), "shared"};
}

TEST(SpeakerLibrary, AddListRenameRemove) {
  parley::testing::TemporaryDirectory folder("library");
  const auto file = folder.path() / "speakers.db";
  {
    SpeakerLibrary library(file);
    library.add("Bob", print({0.5f, -1.25f}), "b.wav");
    library.add("Alice", print({1.0f, 0.1f}), "a.wav 0.0-30.0");
    library.add("Alice", print({0.9f, 0.2f}), "r.json SPEAKER_01");
  }
  SpeakerLibrary library(file);  // it outlives its connection
  auto entries = library.list();
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].name, "Alice");
  EXPECT_EQ(entries[0].source, "a.wav 0.0-30.0");
  EXPECT_EQ(entries[1].name, "Alice");
  EXPECT_EQ(entries[2].name, "Bob");
  EXPECT_EQ(entries[2].voiceprint.embedding, (std::vector<float>{0.5f, -1.25f}));
  EXPECT_EQ(entries[2].voiceprint.model_digest, std::string(64, 'a'));
  EXPECT_EQ(entries[2].created.size(), 20u);  // 2026-11-26T21:04:05Z

  EXPECT_THROW(library.rename("Alice", "Bob"), Error);  // would merge two speakers unasked
  EXPECT_EQ(library.rename("Alice", "Alice_Smith"), 2u);
  EXPECT_EQ(library.rename("Nobody", "Somebody"), 0u);
  EXPECT_EQ(library.rename("Alice_Smith", "Bob", true), 2u);
  EXPECT_EQ(library.remove("Bob"), 3u);
  EXPECT_TRUE(library.list().empty());
  EXPECT_EQ(library.remove("Bob"), 0u);
}

TEST(SpeakerLibrary, RefusesNamesOutputsCannotCarry) {
  parley::testing::TemporaryDirectory folder("library");
  SpeakerLibrary library(folder.path() / "speakers.db");
  for (const std::string& name :
       std::vector<std::string>{"", "Alice Smith", "tab\there", std::string(129, 'x'), "\xff\xfe",
                                "SPEAKER_01", "GLOBAL_00"}) {
    EXPECT_THROW(library.add(name, print({1.0f}), ""), Error) << name;
  }
  EXPECT_NO_THROW(library.add("Zoë", print({1.0f}), ""));
  EXPECT_NO_THROW(library.add("SPEAKER_Bob", print({1.0f}), ""));
  EXPECT_THROW(library.add("Alice", print({}), ""), Error);
  EXPECT_THROW(library.add("Alice", {{1.0f}, "short", "shared"}, ""), Error);
}

TEST(SpeakerLibrary, ExportImportRoundTrip) {
  parley::testing::TemporaryDirectory folder("library");
  SpeakerLibrary first(folder.path() / "one.db");
  // Values that print long: the export keeps every bit.
  first.add("Alice", print({0.1f, 1.0f / 3.0f, -2.5e-8f}), "a.wav", "2026-01-02T03:04:05Z");
  first.add("Bob", print({7.0f, 8.0f, 9.0f}, 'b'), "b.wav");
  const std::string exported = first.export_json();
  SpeakerLibrary second(folder.path() / "two.db");
  EXPECT_EQ(second.import_json(exported), 2u);
  const auto a = first.list();
  const auto b = second.list();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].name, b[i].name);
    EXPECT_EQ(a[i].source, b[i].source);
    EXPECT_EQ(a[i].created, b[i].created);
    EXPECT_EQ(a[i].voiceprint.embedding, b[i].voiceprint.embedding);
    EXPECT_EQ(a[i].voiceprint.model_digest, b[i].voiceprint.model_digest);
    EXPECT_EQ(a[i].voiceprint.embedding_mode, b[i].voiceprint.embedding_mode);
  }
  EXPECT_EQ(second.export_json(), exported);
  // A broken document adds nothing, even when its first voiceprints are fine.
  std::string broken = exported;
  broken.replace(broken.rfind("\"Bob\""), 5, "\"B o b\"");
  EXPECT_THROW(second.import_json(broken), Error);
  EXPECT_EQ(second.list().size(), 2u);
  EXPECT_THROW(second.import_json("{\"voiceprints\": []}"), Error);
  EXPECT_THROW(second.import_json("not json"), Error);
}

TEST(SpeakerLibrary, ImportForOneModelRefusesAnother) {
  parley::testing::TemporaryDirectory folder("library");
  SpeakerLibrary mixed(folder.path() / "mixed.db");
  mixed.add("Alice", print({0.1f, 0.2f}, 'a'), "a.wav");
  mixed.add("Bob", print({0.3f, 0.4f}, 'b'), "b.wav");
  const std::string exported = mixed.export_json();
  SpeakerLibrary library(folder.path() / "one.db");
  try {
    library.import_json(exported, std::string(64, 'a'));
    FAIL() << "Bob's voiceprint of another model was imported";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("voiceprint of Bob was computed by another"),
              std::string::npos)
        << error.what();
  }
  EXPECT_TRUE(library.list().empty());           // all or none
  EXPECT_EQ(library.import_json(exported), 2u);  // no model named: any
  // An embedding that is not a list is refused, not read as one number.
  EXPECT_THROW(library.import_json(R"({"format": "parley-speaker-library", "version": 1,
      "voiceprints": [{"name": "Eve", "model_sha256": ")" +
                                   std::string(64, 'a') + R"(", "embedding": 5}]})"),
               Error);
}

TEST(SpeakerLibrary, ListingNamesEveryFieldButTheEmbedding) {
  const LibraryEntry entry{7, "Alice", print({0.5f, 0.25f, 0.0f}), "a.wav", "2026-01-02T03:04:05Z"};
  const nlohmann::ordered_json listed = listing_json(entry);
  EXPECT_EQ(listed.dump(),
            R"({"id":7,"name":"Alice","source":"a.wav","created":"2026-01-02T03:04:05Z",)"
            R"("model_sha256":")" +
                std::string(64, 'a') + R"(","embedding_mode":"shared","dimension":3})");
}

TEST(SpeakerLibrary, SeveralThreadsAndConnectionsAtOnce) {
  parley::testing::TemporaryDirectory folder("library");
  const auto file = folder.path() / "speakers.db";
  SpeakerLibrary shared(file);
  constexpr int kThreads = 8;
  constexpr int kEach = 25;
  std::atomic<int> failures = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        // Half the threads share one connection, half open their own (as processes would).
        std::unique_ptr<SpeakerLibrary> own;
        if (t % 2 == 1) own = std::make_unique<SpeakerLibrary>(file);
        SpeakerLibrary& library = own ? *own : shared;
        for (int i = 0; i < kEach; ++i) {
          library.add("speaker_" + std::to_string(t), print({static_cast<float>(i), 1.0f}), "");
          static_cast<void>(library.list());
        }
        if (t == 0) library.rename("speaker_0", "renamed_0");
      } catch (const std::exception& error) {
        ADD_FAILURE() << error.what();
        ++failures;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures, 0);
  const auto entries = shared.list();
  EXPECT_EQ(entries.size(), static_cast<std::size_t>(kThreads * kEach));
  std::size_t renamed = 0;
  for (const auto& entry : entries) renamed += entry.name == "renamed_0";
  EXPECT_EQ(renamed, static_cast<std::size_t>(kEach));
}

TEST(SpeakerLibrary, NotALibraryFails) {
  parley::testing::TemporaryDirectory folder("library");
  const auto file = folder.path() / "text.db";
  {
    std::FILE* stream = std::fopen(file.c_str(), "w");
    ASSERT_NE(stream, nullptr);
    std::fputs("this is not a database, but it is long enough to be read as a header.....", stream);
    std::fclose(stream);
  }
  EXPECT_THROW(SpeakerLibrary library(file), Error);
  EXPECT_THROW(SpeakerLibrary library(folder.path() / "no" / "folder.db"), Error);
}

}  // namespace
}  // namespace parley::identity
