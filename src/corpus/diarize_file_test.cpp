#include "corpus/diarize_file.h"

#include <gtest/gtest.h>

#include <sndfile.h>

#include <algorithm>
#include <fstream>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "audio/audio_files_test_support.h"
#include "audio/decoded_audio.h"
#include "audio/decoded_audio_test_support.h"
#include "audio/mono_resampled_stream.h"
#include "audio/resampler.h"
#include "eval/rttm.h"
#include "frames/output.h"
#include "graph/embedding_model_test_support.h"
#include "testing/shared_data.h"
#include "testing/temporary_directory.h"

namespace parley::corpus {
namespace {

// The stages a run went through, in order.
class StageNames : public ProgressSink {
 public:
  void begin(const std::string& stage, std::size_t) override {
    const std::lock_guard lock(mutex_);
    names_.push_back(stage);
  }
  void update(std::size_t) override {}
  void end() override {}
  std::vector<std::string> names() const {
    const std::lock_guard lock(mutex_);
    return names_;
  }
  std::size_t count(const std::string& stage) const {
    const auto all = names();
    return static_cast<std::size_t>(std::count(all.begin(), all.end(), stage));
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> names_;
};

std::string rttm(const pipeline::DiarizationResult& result) {
  return eval::format_rttm(frames::to_eval_turns(result.turns, result.uri));
}

// Everything but the times: the turns as written, the exclusive ones, the centroids.
void expect_same_diarization(const pipeline::DiarizationResult& actual,
                             const pipeline::DiarizationResult& expected) {
  EXPECT_EQ(actual.uri, expected.uri);
  EXPECT_EQ(actual.duration_seconds, expected.duration_seconds);
  EXPECT_EQ(actual.speaker_count, expected.speaker_count);
  EXPECT_EQ(rttm(actual), rttm(expected));
  EXPECT_EQ(eval::format_rttm(frames::to_eval_turns(actual.exclusive_turns, actual.uri)),
            eval::format_rttm(frames::to_eval_turns(expected.exclusive_turns, expected.uri)));
  EXPECT_EQ(actual.speaker_embeddings.values(), expected.speaker_embeddings.values());
}

class DiarizerOnAFile : public ::testing::Test {
 protected:
  // The real segmentation model and a tiny embedding network of WeSpeaker's pooling structure
  // (as pipeline/diarizer_test.cpp): speech regions are real, speaker labels are not.
  void SetUp() override {
    PARLEY_REQUIRE_SHARED(segmentation, "models/segmentation-3.0-fp16.onnx");
    const auto embedding = temp_ / "test_embedding.onnx";
    std::ofstream(embedding, std::ios::binary) << graph::testing::make_test_embedding_model();
    pipeline::DiarizationConfig config;
    config.threads = 2;
    config.clustering.method = cluster::ClusteringMethod::kAhc;
    diarizer_.emplace(pipeline::DiarizationModels{segmentation, embedding, {}}, config);
  }

  // diarize() on what audio::DecodedAudio::decode makes of `path`, the reference.
  pipeline::DiarizationResult diarize_decoded(
      const std::filesystem::path& path, const std::string& uri,
      const std::optional<cluster::SpeakerCountConstraints>& speakers = {}) {
    const audio::DecodedAudio decoded = audio::DecodedAudio::decode(path);
    Progress quiet(Progress::Mode::kNever);
    return diarizer_->diarize(decoded.samples(), uri, quiet, {}, {}, {}, speakers);
  }

  parley::testing::TemporaryDirectory temp_{"diarize-file-test"};
  std::optional<pipeline::Diarizer> diarizer_;
};

TEST_F(DiarizerOnAFile, EqualsDiarizeOnTheDecodedSamples) {
  PARLEY_REQUIRE_SHARED(wav, "eval/falcon-test/test.wav");
  // The same speech as a stereo FLAC at 22,050 Hz: decoded through downmix and resampler.
  const auto flac = temp_ / "test.flac";
  {
    const std::vector<float> samples = audio::load_mono_16k(wav);
    std::vector<float> resampled;
    audio::Resampler resampler(16000, 22050);
    resampler.process(samples, resampled);
    resampler.flush(resampled);
    audio::testing::write_sndfile(flac, SF_FORMAT_FLAC | SF_FORMAT_PCM_24, 22050, 2,
                                  audio::testing::interleave({resampled, resampled}));
  }
  for (const auto& path : {wav, flac}) {
    SCOPED_TRACE(path.filename().string());
    StageNames stages;
    const pipeline::DiarizationResult result = diarize_file(*diarizer_, path, "test", stages);
    ASSERT_FALSE(result.turns.empty());
    expect_same_diarization(result, diarize_decoded(path, "test"));
    // Diarized once; the clustering reported last; the decode's time first among the stages.
    EXPECT_EQ(stages.count("segmentation+embedding"), 1u);
    ASSERT_FALSE(stages.names().empty());
    EXPECT_EQ(stages.names().back(), "clustering");
    ASSERT_FALSE(result.stage_times.entries().empty());
    EXPECT_EQ(result.stage_times.entries().front().first, "decode");

    // Speaker counts of this call replace the configured ones, as in diarize().
    cluster::SpeakerCountConstraints three;
    three.num_speakers = 3;
    Progress quiet(Progress::Mode::kNever);
    FileDiarizationOptions options;
    options.speakers = three;
    const pipeline::DiarizationResult counted =
        diarize_file(*diarizer_, path, "test", quiet, options);
    EXPECT_EQ(counted.speaker_count, 3u);
    expect_same_diarization(counted, diarize_decoded(path, "test", three));
  }
}

// A header that states another length than the file holds (shorter: the decode stops where the
// file goes on; longer: the file ends first) gave chunks planned on the wrong length; the file is
// diarized again on what it holds, which is diarize() of decode()'s samples.
TEST_F(DiarizerOnAFile, AFileOfAnotherLengthThanItsHeaderStatesIsDiarizedAgain) {
  PARLEY_REQUIRE_SHARED(wav, "eval/falcon-test/test.wav");
  const pipeline::DiarizationResult expected = diarize_decoded(wav, "test");
  ASSERT_FALSE(expected.turns.empty());
  const std::size_t length = audio::DecodedAudio::decode(wav).samples().size();
  for (const std::size_t stated : {length / 2, length + 3 * 16000}) {
    SCOPED_TRACE("stated " + std::to_string(stated) + " of " + std::to_string(length));
    for (const std::size_t spill : {audio::DecodedAudio::kDefaultSpillSamples, std::size_t{1000}}) {
      SCOPED_TRACE("spill past " + std::to_string(spill));
      StageNames stages;
      const pipeline::DiarizationResult result = diarize_decoding(
          *diarizer_,
          audio::testing::DecodedAudioTesting::decode_in_background_stating(wav, stated, spill),
          wav, "test", stages);
      EXPECT_EQ(stages.count("segmentation+embedding"), 2u);
      expect_same_diarization(result, expected);
    }
  }
}

// Whether the decode fails before the networks start (no such file) or while they run (a FLAC cut
// short), the decoder's own message is what is thrown, as an AudioFileError.
TEST_F(DiarizerOnAFile, AFileThatCannotBeDecodedIsAnAudioFileError) {
  PARLEY_REQUIRE_SHARED(wav, "eval/falcon-test/test.wav");
  const auto cut = temp_ / "cut.flac";
  audio::testing::write_sndfile(cut, SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 16000, 1,
                                audio::load_mono_16k(wav));
  auto bytes = audio::testing::read_bytes(cut);
  // Cut before a frame header (sync code 0xFFF8) two thirds in: the decoder ends cleanly, short
  // of the header's count.
  std::size_t at = bytes.size() * 2 / 3;
  while (at + 1 < bytes.size() && !(bytes[at] == 0xFF && bytes[at + 1] == 0xF8)) ++at;
  ASSERT_LT(at + 1, bytes.size());
  bytes.resize(at);
  audio::testing::write_bytes(cut, bytes);

  for (const auto& path : {temp_ / "no-such.wav", cut}) {
    SCOPED_TRACE(path.filename().string());
    std::string decoder_message;
    try {
      static_cast<void>(audio::load_mono_16k(path));
    } catch (const Error& error) {
      decoder_message = error.what();
    }
    ASSERT_FALSE(decoder_message.empty());
    Progress quiet(Progress::Mode::kNever);
    try {
      static_cast<void>(diarize_file(*diarizer_, path, "test", quiet));
      ADD_FAILURE() << "expected an AudioFileError";
    } catch (const AudioFileError& error) {
      EXPECT_EQ(error.what(), decoder_message);
    }
  }
  // A caller that stops the run (its progress sink throws) gets its own exception, not the
  // decode's: the run does not wait for the decode to end.
  class Stop : public ProgressSink {
   public:
    void begin(const std::string&, std::size_t) override { throw std::runtime_error("stopped"); }
    void update(std::size_t) override {}
    void end() override {}
  } stop;
  try {
    static_cast<void>(diarize_file(*diarizer_, cut, "test", stop));
    ADD_FAILURE() << "expected the sink's exception";
  } catch (const std::runtime_error& error) {
    EXPECT_STREQ(error.what(), "stopped");
    EXPECT_EQ(dynamic_cast<const Error*>(&error), nullptr);
  }
}

}  // namespace
}  // namespace parley::corpus
