#include "cli/flag_names.h"

#include <gtest/gtest.h>

#include "cluster/speaker_count_constraints.h"
#include "core/error.h"
#include "pipeline/diarizer.h"

namespace parley::cli {
namespace {

std::string error_of(const pipeline::DiarizationConfig& config) {
  try {
    config.validate();
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

TEST(FlagNames, FieldsBecomeFlags) {
  EXPECT_EQ(with_flag_names("step_seconds must be in (0, 10] (got 12)"),
            "--step must be in (0, 10] (got 12)");
  EXPECT_EQ(with_flag_names("min_speakers (3) must not exceed max_speakers (2)"),
            "--min-speakers (3) must not exceed --max-speakers (2)");
  EXPECT_EQ(with_flag_names("provider_options device_id=x: expected a device number"),
            "--provider-option device_id=x: expected a device number");
}

TEST(FlagNames, OnlyWholeIdentifiersChange) {
  EXPECT_EQ(with_flag_names("my_step_seconds and step_seconds_x stay"),
            "my_step_seconds and step_seconds_x stay");
  EXPECT_EQ(with_flag_names("threads must be at least 1"), "threads must be at least 1");
  EXPECT_EQ(with_flag_names(""), "");
}

// The library's own validation messages, as the CLI shows them.
TEST(FlagNames, ConfigValidationReadsAsFlags) {
  pipeline::DiarizationConfig step;
  step.step_seconds = 12.0;
  EXPECT_EQ(with_flag_names(error_of(step)).rfind("--step must be in (0, 10]", 0), 0u)
      << error_of(step);

  pipeline::DiarizationConfig sessions;
  sessions.segmentation_accelerator_sessions = 0;
  EXPECT_NE(with_flag_names(error_of(sessions)).find("--segmentation-sessions"), std::string::npos);

  pipeline::DiarizationConfig shared;
  shared.embedding_mode = pipeline::EmbeddingMode::kShared;
  shared.step_seconds = 1.005;
  const std::string message = with_flag_names(error_of(shared));
  EXPECT_NE(message.find("--embedding-mode shared needs a --step"), std::string::npos) << message;

  pipeline::DiarizationConfig speakers;
  speakers.speakers.min_speakers = 3;
  speakers.speakers.max_speakers = 2;
  EXPECT_NE(with_flag_names(error_of(speakers)).find("--min-speakers (3) must not exceed"),
            std::string::npos);

  pipeline::DiarizationConfig too_many;
  too_many.speakers.max_speakers = cluster::kMaxSpeakerCount + 1;
  EXPECT_EQ(with_flag_names(error_of(too_many)), "--max-speakers must be 1 to 1000 (got 1001)");
}

}  // namespace
}  // namespace parley::cli
