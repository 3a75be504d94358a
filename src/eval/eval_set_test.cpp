#include "eval/eval_set.h"

#include <gtest/gtest.h>

#include <fstream>

#include "core/error.h"
#include "testing/shared_data.h"
#include "testing/temporary_directory.h"

namespace parley::eval {
namespace {

using parley::testing::TemporaryDirectory;

std::filesystem::path write_file(const TemporaryDirectory& dir, const std::string& name,
                                 const std::string& text) {
  std::ofstream(dir / name, std::ios::binary) << text;
  return dir / name;
}

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  return "no error";
}

TEST(EvalSet, PyannoteDevelopmentSubsetOfAmiDebug) {
  PARLEY_REQUIRE_SHARED(ami, "eval/ami-debug");
  const auto files =
      eval_files_from_list(ami / "debug.development.lst", ami, ami / "debug.development.rttm",
                           ami / "debug.development.uem");
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].uri, "dev00");
  EXPECT_EQ(files[1].uri, "dev01");
  for (const EvalFile& file : files) {
    EXPECT_TRUE(file.problem.empty()) << file.problem;
    EXPECT_EQ(file.audio, ami / (file.uri + ".wav"));
    EXPECT_FALSE(file.reference.empty());
    for (const Turn& turn : file.reference) EXPECT_EQ(turn.file_id, file.uri);
    ASSERT_TRUE(file.uem.has_value());
    ASSERT_EQ(file.uem->size(), 1u);
    EXPECT_DOUBLE_EQ((*file.uem)[0].start, 0.0);
    EXPECT_DOUBLE_EQ((*file.uem)[0].end, 30.0);
  }
}

// ami-debug's train list says trñ00 (the audio's name) while its RTTM says trn00: that one
// recording is reported, the nine others are fine.
TEST(EvalSet, UriMissingFromTheReferenceIsAProblemOfThatFileOnly) {
  PARLEY_REQUIRE_SHARED(ami, "eval/ami-debug");
  const auto files = eval_files_from_list(ami / "debug.train.lst", ami, ami / "debug.train.rttm",
                                          ami / "debug.train.uem");
  ASSERT_EQ(files.size(), 10u);
  EXPECT_EQ(files[0].uri, "trñ00");
  EXPECT_NE(files[0].problem.find("'trñ00' is not in the reference"), std::string::npos)
      << files[0].problem;
  EXPECT_NE(files[0].problem.find("'trn00'"), std::string::npos) << files[0].problem;
  for (std::size_t i = 1; i < files.size(); ++i) EXPECT_TRUE(files[i].problem.empty());
}

TEST(EvalSet, ListSkipsCommentsAndFindsOtherAudioExtensions) {
  const TemporaryDirectory dir("eval-set-list");
  write_file(dir, "a.wav", "");
  write_file(dir, "b.flac", "");
  const auto list = write_file(dir, "set.lst", "\xEF\xBB\xBF# two recordings\na\r\n\n  b  \nc\n");
  const auto rttm = write_file(dir, "ref.rttm",
                               "SPEAKER a 1 0.0 1.0 <NA> <NA> x <NA> <NA>\n"
                               "SPEAKER b 1 0.5 1.0 <NA> <NA> y <NA> <NA>\n"
                               "SPEAKER c 1 0.5 1.0 <NA> <NA> y <NA> <NA>\n");
  const auto uem = write_file(dir, "ref.uem", "a 1 0 10\nc 1 0 10\n");
  EXPECT_EQ(read_uri_list(list), (std::vector<std::string>{"a", "b", "c"}));
  const auto files = eval_files_from_list(list, dir.path(), rttm, uem);
  ASSERT_EQ(files.size(), 3u);
  EXPECT_TRUE(files[0].problem.empty());
  EXPECT_EQ(files[1].audio, dir.path() / "b.flac");
  EXPECT_NE(files[1].problem.find("'b' has no line in the UEM"), std::string::npos);
  EXPECT_TRUE(files[2].audio.empty());
  EXPECT_NE(files[2].problem.find("no audio for 'c'"), std::string::npos);
  // Without a UEM the same b is fine.
  EXPECT_TRUE(eval_files_from_list(list, dir.path(), rttm, std::nullopt)[1].problem.empty());
}

TEST(EvalSet, ListErrorsNameTheLine) {
  const TemporaryDirectory dir("eval-set-list-errors");
  const auto twice = write_file(dir, "twice.lst", "a\nb\na\n");
  EXPECT_NE(error_of([&] { read_uri_list(twice); }).find("twice.lst:3: URI 'a' is listed twice"),
            std::string::npos);
  const auto spaced = write_file(dir, "spaced.lst", "a b\n");
  EXPECT_NE(error_of([&] { read_uri_list(spaced); }).find("spaced.lst:1:"), std::string::npos);
  const auto empty = write_file(dir, "empty.lst", "# nothing\n");
  const auto rttm = write_file(dir, "ref.rttm", "SPEAKER a 1 0.0 1.0 <NA> <NA> x <NA> <NA>\n");
  EXPECT_NE(error_of([&] {
              eval_files_from_list(empty, dir.path(), rttm, std::nullopt);
            }).find("no URIs"),
            std::string::npos);
}

TEST(EvalSet, ManifestResolvesPathsFromItsFolder) {
  const TemporaryDirectory dir("eval-set-manifest");
  std::filesystem::create_directories(dir.path() / "audio");
  std::filesystem::create_directories(dir.path() / "ref");
  write_file(dir, "audio/meeting one.wav", "");
  write_file(dir, "audio/b.wav", "");
  write_file(dir, "audio/c.wav", "");
  write_file(dir, "ref/one.rttm", "SPEAKER m1 1 0.0 1.0 <NA> <NA> x <NA> <NA>\n");
  write_file(dir, "ref/all.rttm",
             "SPEAKER b 1 0.0 1.0 <NA> <NA> x <NA> <NA>\n"
             "SPEAKER c 1 0.0 2.0 <NA> <NA> y <NA> <NA>\n");
  write_file(dir, "ref/all.uem", "b 1 0 5\n");
  const auto manifest = write_file(dir, "set.tsv",
                                   "# audio\trttm\tuem\n"
                                   "audio/meeting one.wav\tref/one.rttm\n"
                                   "audio/b.wav\tref/all.rttm\tref/all.uem\n"
                                   "audio/c.wav\tref/all.rttm\tref/all.uem\n"
                                   "audio/missing.wav\tref/all.rttm\n"
                                   "audio/b.wav\tref/broken.rttm\n");
  const auto files = eval_files_from_manifest(manifest);
  ASSERT_EQ(files.size(), 5u);
  // One file id in the RTTM: that is the recording's, whatever the audio is called.
  EXPECT_EQ(files[0].uri, "m1");
  EXPECT_EQ(files[0].audio, dir.path() / "audio/meeting one.wav");
  EXPECT_TRUE(files[0].problem.empty());
  EXPECT_FALSE(files[0].uem.has_value());
  // Several: the one named like the audio.
  EXPECT_EQ(files[1].uri, "b");
  ASSERT_EQ(files[1].reference.size(), 1u);
  ASSERT_TRUE(files[1].uem.has_value());
  EXPECT_DOUBLE_EQ((*files[1].uem)[0].end, 5.0);
  EXPECT_NE(files[2].problem.find("has no line for 'c'"), std::string::npos) << files[2].problem;
  EXPECT_NE(files[3].problem.find("set.tsv:5: audio"), std::string::npos) << files[3].problem;
  EXPECT_NE(files[4].problem.find("broken.rttm"), std::string::npos) << files[4].problem;

  const auto bad = write_file(dir, "bad.tsv", "audio/b.wav\n");
  EXPECT_NE(error_of([&] {
              eval_files_from_manifest(bad);
            }).find("bad.tsv:1: expected 2 or 3 tab-separated fields"),
            std::string::npos);
}

}  // namespace
}  // namespace parley::eval
