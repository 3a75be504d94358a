#include "cli/flag_names.h"

#include <gtest/gtest.h>

#include "cluster/speaker_count_constraints.h"
#include "core/error.h"
#include "pipeline/diarizer.h"
#include "pipeline/option_table.h"

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
  EXPECT_EQ(with_flag_names(""), "");
  EXPECT_EQ(with_flag_names("shared_trunk.features: x. threads."),
            "--embedding-features: x. threads.");
}

// Plain words name an option only where the engine's messages put an option; in prose they stay.
TEST(FlagNames, PlainWordsOnlyWhereTheyNameTheOption) {
  EXPECT_EQ(with_flag_names("threads: must be at least 0 (got -1)"),
            "--threads: must be at least 0 (got -1)");
  EXPECT_EQ(with_flag_names("force_gpu: contradicts provider cpu; name a GPU provider or use "
                            "provider auto"),
            "--force-gpu: contradicts --provider cpu; name a GPU provider or use --provider auto");
  EXPECT_EQ(with_flag_names("no effect on the cpu provider (provider cpu); drop them"),
            "no effect on the cpu provider (--provider cpu); drop them");
  EXPECT_EQ(with_flag_names("unknown execution provider 'metal'; valid names: auto, cpu"),
            "unknown execution provider 'metal'; valid names: auto, cpu");
  EXPECT_EQ(with_flag_names("the run uses 4 threads per core"), "the run uses 4 threads per core");
  EXPECT_EQ(with_flag_names("--threads: already a flag"), "--threads: already a flag");
}

// The engine's messages start "{option}: {problem}" (pipeline/option_values.h) for every option
// of the table: the CLI names the flag for each one it offers, and for the configuration field it
// sets.
TEST(FlagNames, EveryTableOptionBecomesItsFlag) {
  std::size_t options = 0;
  for (const pipeline::OptionSpec& spec : pipeline::diarization_options()) {
    if (!spec.faces.cli) continue;
    ++options;
    EXPECT_EQ(with_flag_names(spec.name + ": must be at least 1 (got 0)"),
              spec.cli_flag + ": must be at least 1 (got 0)");
    if (!spec.config_field.empty()) {
      EXPECT_EQ(with_flag_names(spec.config_field + ": must be at least 1 (got 0)"),
                spec.cli_flag + ": must be at least 1 (got 0)");
    }
  }
  EXPECT_GT(options, 30u);
  // Options the CLI does not offer keep their names (the CLI has another way to set them).
  EXPECT_EQ(with_flag_names("device_id: set twice"), "device_id: set twice");
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
  shared.embedding_mode = stages::EmbeddingMode::kShared;
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
