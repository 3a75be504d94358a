// The command line's hand-kept mapping between the option table's rows and its flag structs
// (`has_own_field`'s list, table_values, with_layout_values, the identity and transcript flags)
// against the table: each CLI option, given alone with a value other than its default, must come
// out of the flags under its own name with that value, and no other option may move. A row missing
// from the mapping, registered twice, or read from another field fails here.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cli/diarization_options.h"
#include "cli/diarize_corpus.h"
#include "cli/identity_options.h"
#include "pipeline/option_table.h"

namespace parley::cli {
namespace {

// Every option value the flags of `parley diarize` hold after parsing `arguments`.
nlohmann::json parsed_values(std::vector<std::string> arguments) {
  CLI::App app;
  DiarizationFlags flags;
  EngineFlags engine;
  std::string devices;
  int engines = 0;
  int jobs = pipeline::kDefaultCorpusJobs;
  std::string trace;
  IdentityFlags identity;
  TranscriptFlags reading;
  add_diarization_flags(app, flags);
  add_engine_flags(app, engine);
  add_engine_layout_flags(app, devices, engines, jobs);
  add_table_flag(app, "trace", trace);  // as add_corpus_flags registers it
  // As `parley diarize` registers them (add_identity_flags, less the library's existence check).
  add_table_flag(app, "voiceprints", identity.voiceprints);
  add_threshold_flag(app, identity.threshold);
  add_table_flag(app, "link_speakers", identity.link_speakers);
  add_table_flag(app, "speakers_table", identity.speakers_table);
  // As `parley diarize` and `parley fuse` register them.
  add_transcript_flags(app, reading);
  // CLI11 parses a reversed vector (the last element first).
  std::reverse(arguments.begin(), arguments.end());
  app.parse(arguments);
  nlohmann::json values = with_trace_value(
      with_layout_values(table_values(engine, flags), devices, engines, jobs), trace);
  if (!identity.voiceprints.empty()) values["voiceprints"] = identity.voiceprints;
  values["identify_threshold"] = identity.threshold;
  values["link_speakers"] = identity.link_speakers;
  if (!identity.speakers_table.empty()) values["speakers_table"] = identity.speakers_table;
  values.update(transcript_values(reading));
  return values;
}

// A valid value of `spec` other than its default, as a user types it.
std::string other_value(const pipeline::OptionSpec& spec) {
  switch (spec.type) {
    case pipeline::OptionType::kNumber:
    case pipeline::OptionType::kInteger: {
      const double low = spec.minimum.value_or(0.0);
      double value = low + 1.0;
      if (spec.maximum && value > *spec.maximum) value = (low + *spec.maximum) / 2.0;
      if (!spec.default_value.is_null() && spec.default_value.get<double>() == value) value += 1.0;
      if (spec.type == pipeline::OptionType::kInteger) {
        return std::to_string(static_cast<long long>(value));
      }
      return fmt::format("{}", value + 0.25);
    }
    case pipeline::OptionType::kChoice:
      for (const std::string& choice : spec.choices) {
        if (choice != spec.default_value) return choice;
      }
      ADD_FAILURE() << spec.name << ": no choice besides the default";
      return "";
    case pipeline::OptionType::kText:
      // Provider names and device lists are checked only when the engine reads them.
      return spec.name == "devices" ? "0,1" : "cpu";
    case pipeline::OptionType::kPath:
      return "/nowhere/" + spec.name;
    case pipeline::OptionType::kList:
      return "device_id=1";
    case pipeline::OptionType::kFlag:
      return "";
  }
  return "";
}

TEST(CliOptionMapping, EveryFlagSetsItsOwnOptionAndNoOther) {
  const nlohmann::json defaults = parsed_values({});
  int checked = 0;
  for (const pipeline::OptionSpec& spec : pipeline::diarization_options()) {
    if (!spec.faces.cli) continue;
    SCOPED_TRACE(spec.name);
    ASSERT_FALSE(spec.cli_flag.empty());
    std::vector<std::string> arguments = {spec.cli_flag};
    const std::string text = other_value(spec);
    if (spec.type != pipeline::OptionType::kFlag) arguments.push_back(text);
    const nlohmann::json expected =
        spec.type == pipeline::OptionType::kFlag ? nlohmann::json(true) : spec.parse(text);
    nlohmann::json values;
    try {
      values = parsed_values(arguments);
    } catch (const CLI::Error& error) {
      ADD_FAILURE() << spec.cli_flag << " " << text << ": " << error.what();
      continue;
    }
    ASSERT_TRUE(values.contains(spec.name)) << spec.cli_flag << " reaches no option value";
    EXPECT_EQ(values.at(spec.name), expected) << spec.cli_flag << " " << text;
    EXPECT_NE(defaults.value(spec.name, nlohmann::json()), expected)
        << "the default already equals the value tried";
    for (const auto& [name, value] : values.items()) {
      if (name == spec.name) continue;
      EXPECT_EQ(value, defaults.value(name, nlohmann::json()))
          << spec.cli_flag << " also changed " << name;
    }
    ++checked;
  }
  EXPECT_GE(checked, 30);
}

// Every value the flags hand on is an option of the table (a misspelt name in table_values
// would otherwise reach apply_options only when that flag is given).
TEST(CliOptionMapping, DefaultsAreTheTablesOptions) {
  const nlohmann::json values = parsed_values({});
  for (const auto& [name, value] : values.items()) {
    const pipeline::OptionSpec& spec = pipeline::diarization_option(name);
    EXPECT_EQ(spec.name, name);
    EXPECT_TRUE(spec.faces.cli) << name;
  }
}

}  // namespace
}  // namespace parley::cli
