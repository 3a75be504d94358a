// The one run driver every face runs a corpus through: what an earlier run finished is skipped,
// a recording that fails fails alone while the others are written, and the outputs do not depend
// on how many engines ran them.
#include "corpus/corpus_run.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <set>

#include "core/error.h"
#include "corpus/run_plan.h"
#include "corpus/run_record.h"
#include "graph/embedding_model_test_support.h"
#include "testing/shared_data.h"
#include "testing/temporary_directory.h"

namespace parley::corpus {
namespace {
namespace fs = std::filesystem;

std::string read(const fs::path& path) {
  std::ifstream stream(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(stream), {}};
}

// The real segmentation model and a tiny embedding network (labels are meaningless, every stage
// runs) over two short real recordings, run on the CPU.
class CorpusRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PARLEY_REQUIRE_SHARED(segmentation, "models/segmentation-3.0-fp16.onnx");
    PARLEY_REQUIRE_SHARED(sample, "eval/pyannote-sample/sample.wav");
    PARLEY_REQUIRE_SHARED(falcon, "eval/falcon-test/test.wav");
    directory_ = std::make_unique<testing::TemporaryDirectory>("corpus-run");
    const fs::path embedding = *directory_ / "embedding.onnx";
    std::ofstream(embedding, std::ios::binary) << graph::testing::make_test_embedding_model();
    models_ = {segmentation, embedding, fs::path()};
    audio_ = {sample, falcon};
  }

  CorpusRunConfig config(int engines) const {
    CorpusRunConfig config;
    config.models = models_;
    config.diarization.threads = 1;
    config.diarization.clustering.method = cluster::ClusteringMethod::kAhc;
    config.layout.engines_per_device = engines;
    return config;
  }

  // What happened in one run of `audio` into `out_dir`.
  struct Report {
    CorpusRunSummary summary;
    std::set<std::size_t> results, skipped, failures;
    std::vector<std::string> progress;
  };

  Report run_into(const fs::path& out_dir, const std::vector<fs::path>& audio, int engines = 1) {
    Report report;
    std::mutex mutex;
    CorpusRunCallbacks callbacks;
    callbacks.on_skipped = [&](std::size_t index, double seconds) {
      std::lock_guard lock(mutex);
      EXPECT_GT(seconds, 0.0);
      EXPECT_TRUE(report.skipped.insert(index).second);
    };
    callbacks.on_result = [&](RecordingOutcome outcome) {
      std::lock_guard lock(mutex);
      EXPECT_TRUE(outcome.ok());
      EXPECT_TRUE(report.results.insert(outcome.index).second);
    };
    callbacks.on_failure = [&](std::size_t index, const fs::path&, const std::string& why) {
      std::lock_guard lock(mutex);
      EXPECT_FALSE(why.empty());
      EXPECT_TRUE(report.failures.insert(index).second);
    };
    callbacks.on_progress = [&](const CorpusRunSummary& summary) {
      std::lock_guard lock(mutex);
      report.progress.push_back(std::to_string(summary.done + summary.failed));
    };
    CorpusRun run(config(engines), std::move(callbacks));
    auto writer = std::make_shared<const OutDirWriter>(
        OutDirRequest{out_dir, {"rttm", "json"}, false, {}},
        cached_run_settings(models_, run.config().diarization));
    for (const fs::path& path : audio) {
      const std::string name = path.stem().string();
      run.add({path, name, {}, {}}, OutDirTarget{writer, writer->plan(name, path)});
    }
    run.finish();
    if (run.summary().pending() > 0) run.run();
    report.summary = run.summary();
    return report;
  }

  std::unique_ptr<testing::TemporaryDirectory> directory_;
  pipeline::DiarizationModels models_;
  std::vector<fs::path> audio_;
};

TEST_F(CorpusRunTest, ConfigNamesItsFieldsAndRefusesWhatCannotRun) {
  CorpusRunConfig config = this->config(1);
  EXPECT_NO_THROW(config.validate());
  EXPECT_NE(config.to_string().find("skip_finished=true"), std::string::npos);
  config.layout.jobs = 0;
  EXPECT_THROW(config.validate(), Error);
  config = this->config(1);
  config.models.embedding.clear();
  EXPECT_THROW(config.validate(), Error);
}

TEST_F(CorpusRunTest, SkipsWhatAnEarlierRunFinished) {
  const fs::path out = *directory_ / "out";
  const Report first = run_into(out, audio_);
  EXPECT_EQ(first.summary.done, 2u);
  EXPECT_EQ(first.summary.skipped, 0u);
  EXPECT_EQ(first.results, (std::set<std::size_t>{0, 1}));
  EXPECT_EQ(first.progress.size(), 2u);
  EXPECT_GT(first.summary.audio_seconds, 0.0);
  const std::string written = read(out / "test.rttm");
  EXPECT_FALSE(written.empty());

  const Report again = run_into(out, audio_);
  EXPECT_EQ(again.summary.done, 0u);
  EXPECT_EQ(again.summary.skipped, 2u);
  EXPECT_EQ(again.skipped, (std::set<std::size_t>{0, 1}));
  EXPECT_TRUE(again.results.empty());
  EXPECT_EQ(read(out / "test.rttm"), written);
}

TEST_F(CorpusRunTest, ABadRecordingFailsAloneWhileTheOthersAreWritten) {
  const fs::path bad = *directory_ / "bad.wav";
  std::ofstream(bad, std::ios::binary) << "not audio at all";
  const fs::path out = *directory_ / "out";
  const Report report = run_into(out, {audio_[0], bad, audio_[1]});
  EXPECT_EQ(report.summary.done, 2u);
  EXPECT_EQ(report.summary.failed, 1u);
  EXPECT_EQ(report.failures, (std::set<std::size_t>{1}));
  EXPECT_EQ(report.results, (std::set<std::size_t>{0, 2}));
  EXPECT_TRUE(fs::exists(out / "sample.rttm"));
  EXPECT_TRUE(fs::exists(out / "test.json"));
  EXPECT_FALSE(fs::exists(out / "bad.rttm"));

  // The failed one is diarized again by a rerun, the others skipped.
  const Report again = run_into(out, {audio_[0], bad, audio_[1]});
  EXPECT_EQ(again.summary.skipped, 2u);
  EXPECT_EQ(again.failures, (std::set<std::size_t>{1}));
}

TEST_F(CorpusRunTest, WritesTheSameOutputsWhateverTheEngineCount) {
  const fs::path one = *directory_ / "one";
  const fs::path two = *directory_ / "two";
  EXPECT_EQ(run_into(one, audio_, 1).summary.done, 2u);
  EXPECT_EQ(run_into(two, audio_, 2).summary.done, 2u);
  for (const char* file : {"sample.rttm", "sample.json", "test.rttm", "test.json"}) {
    EXPECT_EQ(read(one / file), read(two / file)) << file;
  }
}

// A linked run holds every result until its engine has run them all, then writes each with its
// global labels and the speakers table; a recording finished earlier is diarized again (linking
// needs its speakers), and one added without a target comes back as a text.
TEST_F(CorpusRunTest, LinksTheSpeakersOfItsRecordingsAndWritesTheTable) {
  const fs::path out = *directory_ / "linked";
  ASSERT_EQ(run_into(out, {audio_[0]}).summary.done, 1u);  // finished before: not skipped below
  CorpusRunConfig linked = config(1);
  linked.link = CorpusLinking{
      LinkRequest{identity::kDefaultThreshold, out / "speakers.tsv", {}, false}, "rttm", {}};
  std::set<std::size_t> results;
  CorpusRunCallbacks callbacks;
  callbacks.on_result = [&](RecordingOutcome outcome) { results.insert(outcome.index); };
  CorpusRun run(std::move(linked), std::move(callbacks));
  EXPECT_FALSE(run.config().skip_finished);
  auto writer =
      std::make_shared<const OutDirWriter>(OutDirRequest{out, {"rttm"}, false, {}},
                                           cached_run_settings(models_, run.config().diarization));
  run.add({audio_[0], "sample", {}, {}}, OutDirTarget{writer, writer->plan("sample", audio_[0])});
  run.add({audio_[1], "test", {}, {}});
  run.finish();
  EXPECT_EQ(run.linked(), nullptr);
  run.run();
  const LinkedOutcome* done = run.linked();
  ASSERT_NE(done, nullptr);
  EXPECT_TRUE(results.empty());  // a linked run's results are its outcome
  EXPECT_EQ(run.summary().done, 2u);
  EXPECT_EQ(run.summary().skipped, 0u);
  EXPECT_EQ(read(out / "speakers.tsv"), done->table);
  EXPECT_NE(done->table.find("GLOBAL_00"), std::string::npos) << done->table;
  EXPECT_NE(read(out / "sample.rttm").find(" GLOBAL_"), std::string::npos);
  EXPECT_EQ(read(out / "sample.rttm").find("SPEAKER_"), std::string::npos);
  ASSERT_EQ(done->texts.count(1), 1u);
  EXPECT_NE(done->texts.at(1).find(" GLOBAL_"), std::string::npos) << done->texts.at(1);
  EXPECT_EQ(done->texts.count(0), 0u);  // written into its folder instead
}

TEST_F(CorpusRunTest, RefusesTwoRecordingsWritingOneOutputAndAdditionsAfterFinish) {
  CorpusRun run(config(1), {});
  auto writer = std::make_shared<const OutDirWriter>(
      OutDirRequest{*directory_ / "out", {"rttm"}, false, {}}, nlohmann::ordered_json{});
  run.add({audio_[0], "same", {}, {}}, OutDirTarget{writer, writer->plan("same", audio_[0])});
  EXPECT_THROW(
      run.add({audio_[1], "same", {}, {}}, OutDirTarget{writer, writer->plan("same", audio_[1])}),
      Error);
  EXPECT_EQ(run.summary().added, 1u);
  run.finish();
  EXPECT_THROW(run.add({audio_[1], "other", {}, {}}), Error);
  run.stop();
}

// A WAV whose header states `seconds` of 16 kHz mono: a sparse file (a header and a hole), so
// that a recording past the spill limit costs no disk.
void write_silent_wav(const fs::path& path, double seconds) {
  const auto frames = static_cast<std::uint32_t>(seconds * 16000);
  const auto u32 = [](std::string& out, std::uint32_t value) {
    for (int byte = 0; byte < 4; ++byte) out += static_cast<char>((value >> (8 * byte)) & 0xff);
  };
  const auto u16 = [](std::string& out, std::uint16_t value) {
    out += static_cast<char>(value & 0xff);
    out += static_cast<char>(value >> 8);
  };
  std::string header = "RIFF";
  u32(header, 36 + 2 * frames);
  header += "WAVEfmt ";
  u32(header, 16);
  u16(header, 1);  // PCM
  u16(header, 1);  // mono
  u32(header, 16000);
  u32(header, 32000);
  u16(header, 2);
  u16(header, 16);
  header += "data";
  u32(header, 2 * frames);
  std::ofstream(path, std::ios::binary) << header;
  fs::resize_file(path, header.size() + 2 * std::uintmax_t{frames});
}

// TMPDIR set for the test's scope.
class ScopedTmpdir {
 public:
  explicit ScopedTmpdir(const fs::path& folder) {
    if (const char* old = std::getenv("TMPDIR"); old != nullptr) saved_ = old;
    ::setenv("TMPDIR", folder.c_str(), 1);
  }
  ~ScopedTmpdir() {
    if (saved_) {
      ::setenv("TMPDIR", saved_->c_str(), 1);
    } else {
      ::unsetenv("TMPDIR");
    }
  }
  ScopedTmpdir(const ScopedTmpdir&) = delete;
  ScopedTmpdir& operator=(const ScopedTmpdir&) = delete;

 private:
  std::optional<std::string> saved_;
};

// A recording past the spill limit is decoded into a temporary file: with TMPDIR unusable it is
// refused when added (the C batch's submission, the CLI's list), naming the recording and what to
// do, before any model loads or any work starts; one within the limit is taken, and one that
// cannot be opened fails alone at once. A list's plan refuses the whole list the same way before
// the models are even found. Needs no model: nothing here loads one.
TEST(CorpusRunChecks, RefusesALongRecordingWhenTheTemporaryFolderIsUnusable) {
  const testing::TemporaryDirectory directory("corpus-run-long");
  const fs::path long_wav = directory / "long.wav";
  const fs::path short_wav = directory / "short.wav";
  const fs::path missing = directory / "missing.wav";
  const double spill_seconds =
      static_cast<double>(audio::DecodedAudio::kDefaultSpillSamples) / 16000.0;
  write_silent_wav(long_wav, spill_seconds + 60.0);
  write_silent_wav(short_wav, 1.0);

  CorpusRunConfig config;
  config.models = {directory / "segmentation.onnx", directory / "embedding.onnx", fs::path()};
  config.diarization.threads = 1;
  std::vector<std::string> failures;
  CorpusRunCallbacks callbacks;
  callbacks.on_failure = [&](std::size_t, const fs::path&, const std::string& why) {
    failures.push_back(why);
  };

  const std::string no_tmp = (directory / "no-such-tmp").string();
  const auto refused = [&](const std::string& message) {
    return message.find("long.wav") != std::string::npos &&
           message.find("TMPDIR is set to '" + no_tmp + "'") != std::string::npos;
  };
  {
    const ScopedTmpdir unusable(no_tmp);
    CorpusRun run(config, std::move(callbacks));
    try {
      run.add({long_wav, "long", {}, {}});
      ADD_FAILURE() << "a recording that must spill was taken with TMPDIR missing";
    } catch (const Error& error) {
      EXPECT_TRUE(refused(error.what())) << error.what();
    }
    EXPECT_EQ(run.summary().added, 0u);
    EXPECT_EQ(run.add({short_wav, "short", {}, {}}), 0u);
    EXPECT_EQ(run.add({missing, "missing", {}, {}}), 1u);
    EXPECT_EQ(run.summary().failed, 1u);
    ASSERT_EQ(failures.size(), 1u);
    EXPECT_NE(failures.front().find("missing.wav"), std::string::npos) << failures.front();
    EXPECT_EQ(run.summary().pending(), 1u);
    run.stop();

    PlannedRun plan = plan_run({short_wav, long_wav, missing});
    try {
      probe_recordings(plan, config.diarization);
      ADD_FAILURE() << "a list with a recording that must spill was taken with TMPDIR missing";
    } catch (const Error& error) {
      EXPECT_TRUE(refused(error.what())) << error.what();
    }
  }
  // With a usable folder the same list is planned: each recording's length, and the one that
  // cannot be opened named.
  PlannedRun plan = plan_run({short_wav, long_wav, missing});
  probe_recordings(plan, config.diarization);
  ASSERT_EQ(plan.recordings.size(), 3u);
  EXPECT_DOUBLE_EQ(plan.recordings[0].duration_seconds, 1.0);
  EXPECT_DOUBLE_EQ(plan.recordings[1].duration_seconds, spill_seconds + 60.0);
  EXPECT_DOUBLE_EQ(plan.longest_seconds(), spill_seconds + 60.0);
  EXPECT_TRUE(plan.recordings[1].unopened.empty());
  EXPECT_FALSE(plan.recordings[2].unopened.empty());
}

}  // namespace
}  // namespace parley::corpus
