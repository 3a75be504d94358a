#include "pipeline/option_values.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/error.h"
#include "pipeline/option_table.h"

namespace parley::pipeline {
namespace {

// What a configuration says, placement included (the force mode is in no to_json).
nlohmann::json state(const DiarizationConfig& config) {
  nlohmann::json json = {{"output", config.output().to_json()},
                         {"execution", config.execution().to_json()}};
  if (config.placement) json["force"] = static_cast<int>(config.placement->force);
  return json;
}

DiarizationConfig applied(const nlohmann::json& values) {
  DiarizationConfig config;
  apply_options(values, config);
  return config;
}

std::string message_of(const nlohmann::json& values) {
  try {
    applied(values);
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

TEST(OptionValues, EveryOptionWithAConfigTargetChangesTheConfig) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // A value other than the default for each option, and what it needs beside it (both runs).
  const std::map<std::string, std::pair<nlohmann::json, nlohmann::json>> changes = {
      {"provider", {"cpu", {}}},
      {"provider_options", {nlohmann::json::array({"device_id=1"}), {}}},
      {"device_id", {1, {}}},
      {"segmentation_provider", {"cpu", {}}},
      {"embedding_provider", {"cpu", {}}},
      {"force_gpu", {true, {}}},
      {"force_cpu", {true, {}}},
      {"step", {2.0, {}}},
      {"embedding_mode", {"exact", {}}},
      {"embedding_features", {"host", {}}},
      {"clustering", {"ahc", {}}},
      {"ahc_threshold", {0.5, {{"clustering", "ahc"}}}},
      {"num_speakers", {2, {}}},
      {"min_speakers", {2, {}}},
      {"max_speakers", {3, {}}},
      {"gpu_float16", {true, {}}},
      {"sincnet_per_chunk", {true, {}}},
      {"threads", {cores == 1 ? 2 : 1, {}}},
      {"embedding_batch", {64, {}}},
      {"segmentation_batch", {4, {}}},
      {"segmentation_sessions", {2, {}}},
      {"no_streaming", {true, {}}},
      {"cuda_graph", {"on", {}}},
  };
  for (const OptionSpec& spec : diarization_options()) {
    const bool config_target = spec.target == OptionTarget::kOutput ||
                               spec.target == OptionTarget::kExecution ||
                               spec.target == OptionTarget::kPlacement;
    const auto change = changes.find(spec.name);
    if (!config_target) {
      EXPECT_EQ(change, changes.end()) << spec.name << " sets no configuration field";
      continue;
    }
    if (change == changes.end()) {
      ADD_FAILURE() << "add a non-default value of " << spec.name << " to this test";
      continue;
    }
    nlohmann::json base =
        change->second.second.is_null() ? nlohmann::json::object() : change->second.second;
    nlohmann::json given = base;
    given[spec.name] = change->second.first;
    EXPECT_NE(state(applied(base)), state(applied(given))) << spec.name;
  }
}

TEST(OptionValues, DefaultsMakeTheDefaultOutputSettings) {
  // The output settings feed every run's fingerprint (corpus/run_record.h): the defaults must
  // not move them.
  const DiarizationConfig config = applied(nlohmann::json::object());
  EXPECT_EQ(config.output().to_json(), DiarizationConfig{}.output().to_json());
  EXPECT_EQ(config.threads, static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  ASSERT_TRUE(config.placement);
  EXPECT_TRUE(config.placement->choice.automatic);
  EXPECT_EQ(config.placement->force, runtime::ForceMode::kNone);
  // Null is the default too.
  EXPECT_EQ(state(applied({{"step", nullptr}, {"threads", nullptr}})), state(config));
}

TEST(OptionValues, MessagesNameTheOption) {
  EXPECT_EQ(message_of({{"step", 11}}), "step: must be 0.1 to 10 (got 11)");
  EXPECT_EQ(message_of({{"step", "2"}}), "step: expects a number (got \"2\")");
  EXPECT_EQ(message_of({{"num_speakers", 2.5}}), "num_speakers: expects a whole number (got 2.5)");
  EXPECT_EQ(message_of({{"clustering", "kmeans"}}),
            "clustering: expected one of vbx, ahc (got \"kmeans\")");
  EXPECT_EQ(message_of({{"ahc_threshold", 0.5}}), "ahc_threshold: applies to clustering ahc only");
  EXPECT_EQ(message_of({{"force_gpu", true}, {"force_cpu", true}}),
            "force_gpu: contradicts force_cpu; set one of them");
  EXPECT_EQ(message_of({{"force_cpu", true}, {"embedding_provider", "cuda"}}),
            "force_cpu: contradicts embedding_provider cuda; drop one of them");
  EXPECT_EQ(message_of({{"device_id", 1}, {"provider_options", {"device_id=0"}}}),
            "device_id: set twice (in device_id and in provider_options); keep one");
  EXPECT_EQ(message_of({{"step_seconds", 2.0}}),
            "step_seconds: the option is named step; use that name");
  EXPECT_NE(message_of({{"stepp", 2.0}}).find("no diarization option 'stepp'"), std::string::npos);
  EXPECT_EQ(message_of({{"min_speakers", 3}, {"max_speakers", 2}}).empty(), false);
}

// What a server's job may change of the settings its engine's networks already ran with: the
// clustering and the speaker counts; every other output option is refused, naming the field.
TEST(OptionValues, ARecordingChangesOnlyWhatComesAfterTheNetworks) {
  const auto config = [](nlohmann::json values) {
    DiarizationConfig made;
    apply_options(values, made);
    return made;
  };
  const DiarizationConfig engine = config({{"clustering", "ahc"}});
  for (const auto& values : {nlohmann::json{{"clustering", "ahc"}, {"num_speakers", 2}},
                             nlohmann::json{{"clustering", "ahc"}, {"ahc_threshold", 0.3}},
                             nlohmann::json{{"clustering", "vbx"}, {"max_speakers", 3}}}) {
    EXPECT_NO_THROW(engine.check_recording_settings(config(values).output())) << values.dump();
  }
  for (const auto& [values, field] : std::vector<std::pair<nlohmann::json, std::string>>{
           {{{"step", 2.0}}, "step_seconds"},
           {{{"embedding_mode", "exact"}}, "embedding_mode"},
           {{{"gpu_float16", true}}, "accelerator_float16"},
           {{{"sincnet_per_chunk", true}}, "share_segmentation_convolution"},
           {{{"embedding_features", "host"}}, "shared_trunk"}}) {
    try {
      engine.check_recording_settings(config(values).output());
      ADD_FAILURE() << values.dump() << " was taken for one recording";
    } catch (const Error& error) {
      EXPECT_TRUE(std::string(error.what()).starts_with(field + ": this run's networks use"))
          << error.what();
    }
  }
}

TEST(OptionValues, ExplicitModelPathsAreKept) {
  const DiarizationModels models = locate_models({{"segmentation_model", "/a/seg.onnx"},
                                                  {"embedding_model", "/a/emb.onnx"},
                                                  {"plda_dir", "/a/plda"}});
  EXPECT_EQ(models.segmentation, "/a/seg.onnx");
  EXPECT_EQ(models.embedding, "/a/emb.onnx");
  EXPECT_EQ(models.plda, "/a/plda");
}

TEST(OptionSpecParse, TypedValuesAndTheFlagGrammar) {
  for (const char* text : {"true", "1", "on"}) {
    EXPECT_EQ(diarization_option("exclusive").parse(text), true) << text;
  }
  for (const char* text : {"false", "0", "off"}) {
    EXPECT_EQ(diarization_option("exclusive").parse(text), false) << text;
  }
  EXPECT_THROW(diarization_option("exclusive").parse(""), Error);
  try {
    diarization_option("exclusive").parse("maybe");
    ADD_FAILURE() << "maybe taken for a flag";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(), "exclusive: expected true or false (got 'maybe')");
  }
  try {
    diarization_option("step").parse("abc");
    ADD_FAILURE() << "abc taken for a step";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(), "step: expects a number (got 'abc')");
  }
  EXPECT_EQ(diarization_option("step").parse("2"), 2.0);
  EXPECT_TRUE(diarization_option("num_speakers").parse("3").is_number_integer());
  EXPECT_EQ(diarization_option("clustering").parse("ahc"), "ahc");
  EXPECT_EQ(diarization_option("provider_options").parse("device_id=1"),
            nlohmann::json::array({"device_id=1"}));
  // Each parsed value passes the typed check.
  for (const OptionSpec& spec : diarization_options()) {
    if (!spec.default_value.is_null()) {
      EXPECT_NO_THROW(spec.check_value(spec.default_value)) << spec.name;
    }
  }
}

// The transcript options are read in one place for every face that takes a transcript: the
// table's defaults (the fusion's own), a named format, and the table's messages.
TEST(OptionValues, TranscriptOptionsFollowTheTable) {
  const TranscriptOptions defaults = transcript_options(nlohmann::json::object());
  EXPECT_FALSE(defaults.format.has_value());
  EXPECT_EQ(defaults.fusion.gap_tolerance, transcript::FusionOptions{}.gap_tolerance);
  EXPECT_EQ(diarization_option("gap_tolerance").default_value, defaults.fusion.gap_tolerance);
  const TranscriptOptions given =
      transcript_options({{"transcript_format", "ctm"}, {"gap_tolerance", 0.0}});
  EXPECT_EQ(given.format, transcript::TranscriptFormat::ctm);
  EXPECT_EQ(given.fusion.gap_tolerance, 0.0);
  try {
    static_cast<void>(transcript_options({{"gap_tolerance", -1.0}}));
    ADD_FAILURE() << "a negative gap tolerance taken";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(), "gap_tolerance: must be at least 0 (got -1)");
  }
  EXPECT_THROW(static_cast<void>(transcript_options({{"transcript_format", "docx"}})), Error);
  // Not the engine's: apply_options takes them (a server's job hands them with its speaker
  // counts) and leaves the configuration as it is.
  DiarizationConfig config;
  EXPECT_NO_THROW(apply_options({{"transcript_format", "srt"}, {"gap_tolerance", 2.0}}, config));
}

}  // namespace
}  // namespace parley::pipeline
