// The split of DiarizationConfig into what changes the output and how the run goes: a resumable
// run's fingerprint (corpus/run_record.h) is made of output() alone.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "core/error.h"
#include "pipeline/diarizer.h"

namespace parley::pipeline {
namespace {

TEST(DiarizationConfig, OutputSettingsIgnoreHowTheRunGoes) {
  DiarizationConfig base;
  DiarizationConfig faster = base;
  faster.threads = 7;
  faster.segmentation_batch_size = 8;
  faster.embedding_batch_size = 128;
  faster.segmentation_accelerator_sessions = 2;
  faster.streaming = false;
  faster.embedding_provider_options.emplace("device_id", std::string("1"));
  faster.placement.emplace();
  EXPECT_EQ(base.output().to_json().dump(), faster.output().to_json().dump());
  EXPECT_NE(base.execution().to_json().dump(), faster.execution().to_json().dump());
}

TEST(DiarizationConfig, EveryOutputFieldChangesTheOutputSettings) {
  const std::string base = DiarizationConfig{}.output().to_json().dump();
  const auto differs = [&](auto change) {
    DiarizationConfig config;
    change(config);
    return config.output().to_json().dump() != base;
  };
  EXPECT_TRUE(differs([](DiarizationConfig& c) { c.step_seconds = 2.0; }));
  EXPECT_TRUE(differs([](DiarizationConfig& c) { c.share_segmentation_convolution = false; }));
  EXPECT_TRUE(differs([](DiarizationConfig& c) { c.accelerator_float16 = true; }));
  EXPECT_TRUE(differs([](DiarizationConfig& c) { c.embedding_exclude_overlap = false; }));
  EXPECT_TRUE(
      differs([](DiarizationConfig& c) { c.embedding_mode = stages::EmbeddingMode::kExact; }));
  EXPECT_TRUE(differs([](DiarizationConfig& c) { c.shared_trunk.exact_alignment = true; }));
  EXPECT_TRUE(differs([](DiarizationConfig& c) { c.min_duration_off = 0.5; }));
  EXPECT_TRUE(
      differs([](DiarizationConfig& c) { c.clustering.method = cluster::ClusteringMethod::kAhc; }));
  EXPECT_TRUE(differs([](DiarizationConfig& c) { c.speakers.num_speakers = 2; }));
}

TEST(DiarizationConfig, OutputSettingsAreCanonical) {
  // Keys sorted, so that the text does not depend on the order fields are written in.
  const nlohmann::json json = DiarizationConfig{}.output().to_json();
  std::string previous;
  for (const auto& item : json.items()) {
    EXPECT_LT(previous, item.key());
    previous = item.key();
  }
  // Shared mode's details mean nothing in exact mode and do not tell exact runs apart.
  DiarizationConfig exact;
  exact.embedding_mode = stages::EmbeddingMode::kExact;
  DiarizationConfig exact_other_blocks = exact;
  exact_other_blocks.shared_trunk.block_frames = 3000;
  EXPECT_EQ(exact.output().to_json(), exact_other_blocks.output().to_json());
}

std::string validation_error(const DiarizationConfig& config) {
  try {
    config.validate();
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

// The checks every face relies on (the C API, the CLI, Python, the server only translate their
// messages): each speaks of configuration fields.
TEST(DiarizationConfigValidation, SpeakerCountsAreBounded) {
  DiarizationConfig config;
  config.speakers.max_speakers = cluster::kMaxSpeakerCount + 1;
  EXPECT_EQ(validation_error(config), "max_speakers must be 1 to 1000 (got 1001)");
  config.speakers.max_speakers = cluster::kMaxSpeakerCount;
  EXPECT_EQ(validation_error(config), "(no error)");
  config.speakers.num_speakers = 0;
  EXPECT_EQ(validation_error(config), "num_speakers must be 1 to 1000 (got 0)");
}

TEST(DiarizationConfigValidation, ThreadsAreBoundedByTheMachine) {
  DiarizationConfig config;
  config.threads = max_threads() + 1;
  EXPECT_EQ(
      validation_error(config).rfind(fmt::format("threads must be at most {}", max_threads()), 0),
      0u)
      << validation_error(config);
  config.threads = max_threads();
  EXPECT_EQ(validation_error(config), "(no error)");
}

TEST(DiarizationConfigValidation, ProviderOptionsNeedAnAccelerator) {
  DiarizationConfig config;
  config.placement.emplace();
  config.placement->options["device_id"] = "0";
  EXPECT_EQ(validation_error(config), "(no error)");  // auto: for whichever accelerator is used
  config.placement->choice = runtime::ProviderChoice::parse("cpu");
  EXPECT_EQ(validation_error(config),
            "provider_options (device_id=0) have no effect on the cpu provider (provider cpu); "
            "drop them");
  config.placement->choice = runtime::ProviderChoice::parse("auto");
  config.placement->force = runtime::ForceMode::kCpu;
  EXPECT_EQ(
      validation_error(config),
      "provider_options (device_id=0) have no effect on the cpu provider (force_cpu); drop them");
}

}  // namespace
}  // namespace parley::pipeline
