// The one implementation of resumable runs (fingerprint, destinations, records, skip decision)
// that the CLI, the C API and parley.distributed share.
#include "corpus/run_record.h"

#include <gtest/gtest.h>

#include <fstream>

#include "core/error.h"
#include "core/heap.h"
#include "core/sha256.h"
#include "corpus/engine_layout.h"
#include "pipeline/network_placement.h"
#include "testing/temporary_directory.h"

namespace parley::corpus {
namespace {
namespace fs = std::filesystem;

class RunRecordTest : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = std::make_unique<testing::TemporaryDirectory>("run-record");
    models_ = {*folder_ / "segmentation.onnx", *folder_ / "embedding.onnx", *folder_ / "plda"};
    write(models_.segmentation, "segmentation");
    write(models_.embedding, "embedding");
    fs::create_directories(models_.plda);
    write(models_.plda / "plda.npz", "plda");
    write(models_.plda / "xvec_transform.npz", "xvec");
    audio_ = *folder_ / "talk.wav";
    write(audio_, "not really audio");
    out_dir_ = *folder_ / "out";
    fs::create_directories(out_dir_);
  }

  static void write(const fs::path& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
  }
  static std::string read(const fs::path& path) {
    std::ifstream stream(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(stream), {}};
  }
  nlohmann::ordered_json settings(const pipeline::DiarizationConfig& config,
                                  bool exclusive = false) const {
    return run_settings(config.output(), model_digests(models_), "cpu", exclusive);
  }
  PlannedRecording plan(const nlohmann::ordered_json& run, const std::string& format = "rttm") {
    return plan_recording(out_dir_, "talk", format, run, audio_);
  }
  void finish(const PlannedRecording& planned, const std::string& text) {
    pipeline::DiarizationResult result;
    result.duration_seconds = 12.5;
    write_result(planned.destination, text, make_record(planned, text, result, 0.25));
  }

  std::unique_ptr<testing::TemporaryDirectory> folder_;
  pipeline::DiarizationModels models_;
  fs::path audio_;
  fs::path out_dir_;
};

TEST_F(RunRecordTest, FingerprintIgnoresHowTheRunGoes) {
  pipeline::DiarizationConfig slow;
  pipeline::DiarizationConfig fast = slow;
  fast.threads = 16;
  fast.segmentation_batch_size = 8;
  fast.embedding_batch_size = 128;
  fast.streaming = false;
  fast.segmentation_accelerator_sessions = 2;
  EXPECT_EQ(plan(settings(slow)).fingerprint, plan(settings(fast)).fingerprint);
}

TEST_F(RunRecordTest, FingerprintFollowsOutputSettingsModelsAudioAndFormat) {
  const pipeline::DiarizationConfig config;
  const std::string base = plan(settings(config)).fingerprint;
  pipeline::DiarizationConfig other_step = config;
  other_step.step_seconds = 2.0;
  EXPECT_NE(plan(settings(other_step)).fingerprint, base);
  EXPECT_NE(plan(settings(config, true)).fingerprint, base);
  EXPECT_NE(plan(settings(config), "json").fingerprint, base);
  EXPECT_NE(plan(run_settings(config.output(), model_digests(models_), "cuda", false)).fingerprint,
            base);
  write(models_.plda / "plda.npz", "other plda");
  EXPECT_NE(plan(settings(config)).fingerprint, base);
  write(models_.plda / "plda.npz", "plda");
  EXPECT_EQ(plan(settings(config)).fingerprint, base);
  write(audio_, "other audio, other size");
  EXPECT_NE(plan(settings(config)).fingerprint, base);
}

// Every face fingerprints a run through cached_run_settings: its providers are those the engine
// layout (what a corpus run and the server run) and the Diarizer resolve for the configuration,
// including models split across providers (given as they are, so no provider is asked).
TEST_F(RunRecordTest, RunSettingsNameTheProvidersTheEngineRuns) {
  pipeline::DiarizationConfig split;
  split.segmentation_provider = runtime::ProviderId::kCuda;
  pipeline::DiarizationConfig gpu = split;
  gpu.embedding_provider = runtime::ProviderId::kCuda;
  for (const auto& [config, expected] :
       {std::pair{pipeline::DiarizationConfig{}, "cpu"},
        std::pair{split, "segmentation cuda, embedding cpu"}, std::pair{gpu, "cuda"}}) {
    const nlohmann::ordered_json settings = cached_run_settings(models_, config);
    EXPECT_EQ(settings["providers"], expected);
    EXPECT_EQ(settings["providers"],
              plan_engine_layout(models_, config, {}).describe()["providers"]);
    EXPECT_EQ(settings["providers"], describe_providers(models_, config));
    EXPECT_EQ(settings["exclusive"], false) << "an OutDirWriter sets its own";
    EXPECT_EQ(settings, run_settings(config.output(), model_digests(models_), expected, false));
  }
}

TEST_F(RunRecordTest, FinishedRecordingIsSkippedUntilItsOutputChanges) {
  const auto run = settings(pipeline::DiarizationConfig{});
  const PlannedRecording first = plan(run);
  EXPECT_FALSE(first.finished);
  EXPECT_EQ(first.destination.output, out_dir_ / "talk.rttm");
  EXPECT_EQ(first.destination.record, out_dir_ / ".parley" / "talk.rttm.json");
  EXPECT_EQ(records_folder(out_dir_), out_dir_ / ".parley");
  finish(first, "SPEAKER talk 1 0.000 1.000 <NA> <NA> SPEAKER_00 <NA> <NA>\n");
  EXPECT_TRUE(plan(run).finished);
  const auto record = finished_record(first.destination, first.fingerprint);
  ASSERT_TRUE(record.has_value());
  EXPECT_EQ((*record)["output_sha256"], sha256_file(first.destination.output));
  EXPECT_EQ((*record)["audio_seconds"], 12.5);
  EXPECT_EQ((*record)["settings"]["format"], "rttm");
  // Another format has a record of its own.
  EXPECT_FALSE(plan(run, "json").finished);
  // An output emptied or edited since is made again.
  write(first.destination.output, "");
  EXPECT_FALSE(plan(run).finished);
  // So is one whose record cannot be read.
  finish(first, "text");
  write(first.destination.record, "{not json");
  EXPECT_FALSE(plan(run).finished);
}

TEST_F(RunRecordTest, RecordIsWrittenWithItsFolder) {
  fs::remove_all(out_dir_);
  fs::create_directories(out_dir_);
  const PlannedRecording planned = plan(settings(pipeline::DiarizationConfig{}));
  finish(planned, "text");
  EXPECT_EQ(read(planned.destination.output), "text");
  EXPECT_TRUE(fs::is_regular_file(planned.destination.record));
}

// The providers are in the fingerprint: a run that knows its recordings' lengths (the CLI) must
// place its networks as one that does not (the C API, parley.distributed), or they redo each
// other's work.
TEST(FingerprintedPlacement, WeighsTheDefaultLengthWhateverTheRecordings) {
  pipeline::DiarizationConfig config;
  config.placement = pipeline::ProviderPlacement{};
  config.placement->expected_audio_seconds = 15.0;
  for (const double longest : {0.0, 15.0, 36000.0}) {
    const pipeline::DiarizationConfig routed = fingerprinted_placement(config, longest);
    ASSERT_TRUE(routed.placement);
    EXPECT_EQ(routed.placement->expected_audio_seconds,
              pipeline::ProviderPlacement{}.expected_audio_seconds);
    EXPECT_EQ(routed.placement->longest_audio_seconds, longest);
  }
  EXPECT_FALSE(fingerprinted_placement(pipeline::DiarizationConfig{}, 15.0).placement);
}

// The longest recording still bounds the step: it is refused before any model loads.
TEST(FingerprintedPlacement, StepIsCheckedAgainstTheLongestRecording) {
  if (memory_budget_bytes() == 0) GTEST_SKIP() << "the system does not say how much memory it has";
  pipeline::DiarizationConfig config;
  config.step_seconds = 0.01;
  config.placement = pipeline::ProviderPlacement{};
  const double year = 365.0 * 24 * 3600;
  try {
    static_cast<void>(pipeline::plan_model_sessions({}, fingerprinted_placement(config, year)));
    FAIL() << "a year at a 10 ms step was accepted";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("a recording of 8760.0 h"), std::string::npos)
        << error.what();
  }
}

TEST(UtcTimestamp, NanosecondsInUtc) {
  using namespace std::chrono;
  const auto time = file_clock::from_sys(sys_days{year{2020} / 2 / 2} + hours{2} + minutes{2} +
                                         seconds{2} + nanoseconds{5});
  EXPECT_EQ(utc_timestamp(time), "2020-02-02T02:02:02.000000005Z");
}

}  // namespace
}  // namespace parley::corpus
