#include "corpus/recording_list.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/sha256.h"
#include "core/temporary_directory.h"

namespace parley::corpus {
namespace {
namespace fs = std::filesystem;

void write(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// Every name fits a file name with its format and record suffixes, and no two are alike.
void expect_usable(const std::vector<std::string>& names) {
  const std::set<std::string> distinct(names.begin(), names.end());
  EXPECT_EQ(distinct.size(), names.size());
  for (const auto& name : names) {
    EXPECT_LE(name.size(), kMaxOutputNameBytes) << name;
    EXPECT_FALSE(name.empty());
    EXPECT_EQ(name.find('\0'), std::string::npos) << name;
    EXPECT_EQ(name.find('/'), std::string::npos) << name;
  }
}

TEST(RecordingManifest, KeepsEachLinesBytesForThatRecordingToFailAlone) {
  const TemporaryDirectory folder("parley-manifest-");
  const std::string nul_line("short.wav\0evil.wav", 18);
  write(folder / "list.txt",
        "# comment\na.wav\n" + nul_line + "\ncaf\xE9.wav\r\n\n  b.wav\tref.rttm\n");
  const auto paths = read_recording_manifest(folder / "list.txt");
  ASSERT_EQ(paths.size(), 4u);
  EXPECT_EQ(paths[0], folder.path() / "a.wav");
  EXPECT_EQ(paths[1], folder.path() / nul_line);
  EXPECT_EQ(paths[2], folder.path() / "caf\xE9.wav");
  EXPECT_EQ(paths[3], folder.path() / "b.wav");
}

TEST(RecordingManifest, ReadsAPipeWithPathsFromTheCurrentFolder) {
  const TemporaryDirectory folder("parley-manifest-");
  const fs::path fifo = folder / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&] { write(fifo, "x.wav\n/abs/y.wav\n"); });
  const auto paths = read_recording_manifest(fifo);
  writer.join();
  ASSERT_EQ(paths.size(), 2u);
  EXPECT_EQ(paths[0], fs::path("x.wav"));  // not <folder>/x.wav: a pipe's folder means nothing
  EXPECT_EQ(paths[1], fs::path("/abs/y.wav"));
}

TEST(RecordingManifest, AFileBehindDevFdIsReadLikeAPipe) {
  const TemporaryDirectory folder("parley-manifest-");
  write(folder / "list.txt", "x.wav\n");
  const int descriptor = ::open((folder / "list.txt").c_str(), O_RDONLY);
  ASSERT_GE(descriptor, 0);
  const auto paths = read_recording_manifest("/dev/fd/" + std::to_string(descriptor));
  ::close(descriptor);
  EXPECT_EQ(paths, std::vector<fs::path>{"x.wav"});
}

TEST(RecordingManifest, RefusesFoldersDevicesEmptyListsAndNulInItsOwnPath) {
  const TemporaryDirectory folder("parley-manifest-");
  EXPECT_THROW(read_recording_manifest(folder.path()), Error);
  EXPECT_THROW(read_recording_manifest("/dev/zero"), Error);
  write(folder / "empty.txt", "# nothing\n\n");
  EXPECT_THROW(read_recording_manifest(folder / "empty.txt"), Error);
  EXPECT_THROW(read_recording_manifest(fs::path(std::string("list.txt\0x", 10))), Error);
}

TEST(WithoutRepeats, KeepsTheFirstMentionOfEachFile) {
  const std::vector<fs::path> listed = {"/c/a.wav", "/c/b.wav", "/c/./a.wav", "/c/x/../b.wav",
                                        "/d/a.wav"};
  std::vector<RepeatedRecording> repeats;
  const auto once = without_repeats(listed, &repeats);
  EXPECT_EQ(once, (std::vector<fs::path>{"/c/a.wav", "/c/b.wav", "/d/a.wav"}));
  ASSERT_EQ(repeats.size(), 2u);
  EXPECT_EQ(repeats[0].repeat, 2u);
  EXPECT_EQ(repeats[0].first, 0u);
  EXPECT_EQ(repeats[1].repeat, 3u);
  EXPECT_EQ(repeats[1].first, 1u);
  EXPECT_EQ(without_repeats(listed, nullptr).size(), 3u);
}

TEST(OutputNames, SameNameInTwoFoldersTakesDigitsOfThePath) {
  const auto names = unique_output_names({"/talks/a.wav", "/music/a.flac", "/b.wav"});
  EXPECT_EQ(names[0], "a-" + sha256_text("/talks/a.wav").substr(0, 8));
  EXPECT_EQ(names[1], "a-" + sha256_text("/music/a.flac").substr(0, 8));
  EXPECT_EQ(names[2], "b");
}

TEST(OutputNames, AFileNamedLikeAnotherOnesDigitsIsNotTakenForARepeat) {
  // /c/x.wav and /c/a/x.wav become x-<8 digits>; a file already called so must not clash.
  const std::string digits = sha256_text("/c/a/x.wav").substr(0, 8);
  const std::vector<fs::path> listed = {"/c/x-" + digits + ".wav", "/c/a/x.wav", "/c/x.wav"};
  const auto names = unique_output_names(listed);
  expect_usable(names);
  // Shards name alike: the names depend on the set of paths, not their order.
  const auto reversed = unique_output_names({listed[2], listed[1], listed[0]});
  EXPECT_EQ(reversed[0], names[2]);
  EXPECT_EQ(reversed[2], names[0]);
}

TEST(OutputNames, LongNamesAreCutAndStayApart) {
  const std::string long_stem(255 - 4, 'x');
  const std::string other_stem = std::string(200, 'x') + "y";
  std::string accented;
  for (int i = 0; i < 120; ++i) accented += "\xC3\xA9";  // 240 bytes of e-acute
  const auto names =
      unique_output_names({"/a/" + long_stem + ".wav", "/a/" + other_stem + ".wav",
                           "/b/" + long_stem + ".wav", "/a/" + accented + ".wav", "/a/short.wav"});
  expect_usable(names);
  EXPECT_EQ(names[4], "short");
  // The cut e-acutes stay whole characters before the digits.
  const std::string cut = names[3].substr(0, names[3].rfind('-'));
  EXPECT_EQ(cut.size() % 2, 0u);
  EXPECT_EQ(names[3].compare(0, cut.size(), accented, 0, cut.size()), 0);
}

TEST(OutputNames, ControlCharactersAndBytesThatAreNotUtf8) {
  const auto names = unique_output_names({fs::path(std::string("/a/short.wav\0evil.wav", 21)),
                                          "/a/caf\xE9.wav", "/a/caf\xC3\xA9.wav"});
  expect_usable(names);
  EXPECT_EQ(names[0], "short.wav_evil");
  EXPECT_EQ(names[1], "caf\xE9");  // kept as bytes: a file name need not be UTF-8
  EXPECT_EQ(names[2], "caf\xC3\xA9");
}

TEST(OutputNames, AFileListedTwiceIsRefused) {
  EXPECT_THROW(unique_output_names({"/a/x.wav", "/a/./x.wav"}), Error);
}

TEST(ChosenOutputName, TakesAFileNameOrTheRecordingsOwn) {
  EXPECT_EQ(chosen_output_name(std::nullopt, "/a/talk.wav"), "talk");
  EXPECT_EQ(chosen_output_name(std::string("meeting-01"), "/a/talk.wav"), "meeting-01");
  EXPECT_EQ(chosen_output_name(std::string(kMaxOutputNameBytes, 'x'), "/a/talk.wav"),
            std::string(kMaxOutputNameBytes, 'x'));
  for (const std::string& bad :
       {std::string(), std::string("."), std::string(".."), std::string("a/b"),
        std::string(kMaxOutputNameBytes + 1, 'x'), std::string("a\0b", 3)}) {
    try {
      chosen_output_name(bad, "/a/talk.wav");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& error) {
      EXPECT_NE(std::string(error.what()).find("must be a file name"), std::string::npos)
          << error.what();
    }
  }
}

}  // namespace
}  // namespace parley::corpus
