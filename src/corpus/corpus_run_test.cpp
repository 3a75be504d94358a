// The one run driver every face runs a corpus through: what an earlier run finished is skipped,
// a recording that fails fails alone while the others are written, and the outputs do not depend
// on how many engines ran them.
#include "corpus/corpus_run.h"

#include <gtest/gtest.h>

#include <fstream>
#include <mutex>
#include <set>

#include "core/error.h"
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

}  // namespace
}  // namespace parley::corpus
