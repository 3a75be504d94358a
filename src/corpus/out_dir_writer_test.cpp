// The out-dir loop every face shares: formats and exclusive as fields, the skip decision over
// every format, and records that a rerun with other choices does not take for its own.
#include "corpus/out_dir_writer.h"

#include <gtest/gtest.h>

#include <fstream>

#include "core/error.h"
#include "pipeline/result_writer.h"
#include "testing/temporary_directory.h"

namespace parley::corpus {
namespace {
namespace fs = std::filesystem;

class OutDirWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = std::make_unique<testing::TemporaryDirectory>("out-dir-writer");
    audio_ = *folder_ / "talk.wav";
    std::ofstream(audio_, std::ios::binary) << "not really audio";
    // Two overlapping speakers: the exclusive turns differ from the plain ones.
    result_.uri = "talk";
    result_.duration_seconds = 10.0;
    result_.speaker_count = 2;
    result_.turns = {{0.0, 6.0, "SPEAKER_00"}, {4.0, 9.0, "SPEAKER_01"}};
    result_.exclusive_turns = {{0.0, 5.0, "SPEAKER_00"}, {5.0, 9.0, "SPEAKER_01"}};
  }

  OutDirWriter writer(std::vector<std::string> formats, bool exclusive) const {
    OutDirRequest request;
    request.out_dir = *folder_ / "out";
    request.formats = std::move(formats);
    request.exclusive = exclusive;
    return OutDirWriter(request, {{"step", 1.0}, {"exclusive", false}});
  }
  static std::string read(const fs::path& path) {
    std::ifstream stream(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(stream), {}};
  }

  std::unique_ptr<testing::TemporaryDirectory> folder_;
  fs::path audio_;
  pipeline::DiarizationResult result_;
};

TEST_F(OutDirWriterTest, WritesEveryFormatWithTheExclusiveTurnsAndSkipsThemOnARerun) {
  const OutDirWriter exclusive = writer({"rttm", "txt"}, true);
  EXPECT_EQ(exclusive.settings().at("exclusive"), true);
  PlannedOutputs planned = exclusive.plan("talk", audio_);
  ASSERT_EQ(planned.formats.size(), 2u);
  EXPECT_FALSE(planned.finished());
  exclusive.write(planned, result_, 0.5);

  pipeline::ResultFormatOptions options;
  options.exclusive = true;
  EXPECT_EQ(read(*folder_ / "out" / "talk.rttm"),
            pipeline::format_result(result_, "rttm", options));
  EXPECT_EQ(read(*folder_ / "out" / "talk.txt"), pipeline::format_result(result_, "txt", options));
  EXPECT_NE(read(*folder_ / "out" / "talk.rttm"), pipeline::format_result(result_, "rttm"));
  EXPECT_TRUE(fs::is_regular_file(*folder_ / "out" / ".parley" / "talk.txt.json"));
  EXPECT_TRUE(exclusive.plan("talk", audio_).finished());

  // The overlapping turns are other output: not taken for finished.
  EXPECT_FALSE(writer({"rttm"}, false).plan("talk", audio_).finished());
  // One format more than was written: the recording is diarized again.
  EXPECT_FALSE(writer({"rttm", "txt", "json"}, true).plan("talk", audio_).finished());
  EXPECT_TRUE(writer({"txt"}, true).plan("talk", audio_).finished());
}

TEST_F(OutDirWriterTest, AFormatterWritesWhatAFaceMakesOfTheResult) {
  const OutDirWriter plain = writer({"rttm"}, false);
  const PlannedOutputs planned = plain.plan("talk", audio_);
  plain.write(planned, result_, 0.5,
              [](const pipeline::DiarizationResult& result, const std::string& format) {
                return format + " of " + result.uri + "\n";
              });
  EXPECT_EQ(read(*folder_ / "out" / "talk.rttm"), "rttm of talk\n");
  EXPECT_TRUE(plain.plan("talk", audio_).finished());
}

TEST_F(OutDirWriterTest, RefusesUnknownRepeatedOrNoFormatsInFieldWords) {
  for (const auto& formats : std::vector<std::vector<std::string>>{{"mp3"}, {"rttm", "rttm"}, {}}) {
    try {
      static_cast<void>(writer(formats, false));
      ADD_FAILURE() << "accepted " << formats.size() << " formats";
    } catch (const Error& error) {
      EXPECT_NE(std::string(error.what()).find("format"), std::string::npos) << error.what();
      EXPECT_EQ(std::string(error.what()).find("--"), std::string::npos) << error.what();
    }
  }
}

TEST_F(OutDirWriterTest, ClaimsRefuseASecondRecordingWritingTheSameOutput) {
  const OutDirWriter both = writer({"rttm", "json"}, false);
  OutputClaims claims;
  claims.claim(both.plan("talk", audio_), 0, audio_);
  // Another recording under the same name, in one of the same formats: refused, naming both.
  const fs::path other = *folder_ / "other" / "talk.wav";
  try {
    claims.claim(writer({"txt", "json"}, false).plan("talk", other), 1, other);
    ADD_FAILURE() << "a second claim of talk.json was accepted";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find(other.string()), std::string::npos) << message;
    EXPECT_NE(message.find("recording 0 (" + audio_.string() + ")"), std::string::npos) << message;
  }
  // Refused whole: its other outputs were not claimed either, and other names are free.
  claims.claim(writer({"txt"}, false).plan("talk", other), 1, other);
  claims.claim(both.plan("talk-2", other), 2, other);
}

}  // namespace
}  // namespace parley::corpus
