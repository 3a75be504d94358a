#include "pipeline/option_table.h"

#include <gtest/gtest.h>

#include <set>

#include "core/error.h"
#include "pipeline/diarizer.h"

namespace parley::pipeline {
namespace {

TEST(OptionTable, NamesAndFlagsAreUniqueAndDefaultsAreTheConfigs) {
  std::set<std::string> names;
  std::set<std::string> flags;
  for (const OptionSpec& spec : diarization_options()) {
    EXPECT_TRUE(names.insert(spec.name).second) << spec.name;
    if (spec.faces.cli) {
      EXPECT_TRUE(flags.insert(spec.cli_flag).second) << spec.cli_flag;
      // The CLI's older spellings, kept: they are in scripts.
      const std::set<std::string> spelt_otherwise = {"--models", "--plda", "--provider-option"};
      if (!spelt_otherwise.contains(spec.cli_flag)) {
        EXPECT_EQ(spec.cli_flag, "--" + replace_underscores(spec.name)) << spec.name;
      }
    }
    if (spec.type == OptionType::kChoice) {
      EXPECT_NE(std::find(spec.choices.begin(), spec.choices.end(), spec.default_value),
                spec.choices.end())
          << spec.name;
    }
  }
  const DiarizationConfig defaults;
  EXPECT_EQ(diarization_option("step").default_value, defaults.step_seconds);
  EXPECT_EQ(diarization_option("embedding_batch").default_value, defaults.embedding_batch_size);
  EXPECT_EQ(diarization_option("embedding_mode").default_value,
            stages::embedding_mode_name(defaults.embedding_mode));
  // The older public name of step (parley_params.step_seconds) finds it.
  EXPECT_EQ(&diarization_option("step_seconds"), &diarization_option("step"));
  EXPECT_THROW(diarization_option("stepp"), Error);
}

TEST(OptionTable, ChecksValuesInTheTablesTerms) {
  EXPECT_EQ(diarization_option("step").check("2"), "");
  EXPECT_EQ(diarization_option("step").check("11"), "must be 0.1 to 10 (got 11)");
  EXPECT_EQ(diarization_option("num_speakers").check("2.5"), "expects a whole number (got '2.5')");
  EXPECT_EQ(diarization_option("num_speakers").check("0"), "must be 1 to 1000 (got 0)");
  EXPECT_EQ(diarization_option("clustering").check("kmeans"),
            "expected one of vbx, ahc (got 'kmeans')");
  EXPECT_EQ(diarization_option("format").check("vtt"), "");
  EXPECT_EQ(diarization_option("exclusive").check("yes"), "expected true or false (got 'yes')");
}

TEST(OptionTable, JsonSaysWhichFacesOfferEachOption) {
  const auto json = nlohmann::json::parse(diarization_options_json());
  ASSERT_EQ(json.size(), diarization_options().size());
  const auto step = std::find_if(json.begin(), json.end(),
                                 [](const auto& option) { return option["name"] == "step"; });
  ASSERT_NE(step, json.end());
  EXPECT_EQ((*step)["faces"]["cli"], "--step");
  EXPECT_EQ((*step)["faces"]["c"], "step");
  EXPECT_EQ((*step)["faces"]["server"], true);
  EXPECT_EQ((*step)["minimum"], 0.1);
  EXPECT_EQ((*step)["config_field"], "step_seconds");
  EXPECT_EQ((*step)["aliases"], nlohmann::json::array({"step_seconds"}));
}

TEST(OptionTable, EachOptionSaysWhatItSets) {
  EXPECT_EQ(diarization_option("step").target, OptionTarget::kOutput);
  EXPECT_EQ(diarization_option("threads").target, OptionTarget::kExecution);
  EXPECT_EQ(diarization_option("force_cpu").target, OptionTarget::kPlacement);
  EXPECT_EQ(diarization_option("jobs").target, OptionTarget::kLayout);
  EXPECT_EQ(diarization_option("plda_dir").target, OptionTarget::kModels);
  EXPECT_EQ(diarization_option("format").target, OptionTarget::kFace);
  // The server fixes its engine when it starts: what sets the engine is no form field, apart
  // from the output settings it takes per request and checks against its own.
  for (const OptionSpec& spec : diarization_options()) {
    if (spec.target == OptionTarget::kExecution || spec.target == OptionTarget::kPlacement ||
        spec.target == OptionTarget::kModels || spec.target == OptionTarget::kLayout) {
      EXPECT_FALSE(spec.faces.server) << spec.name;
    }
  }
}

// Every option that changes the output, the speed or the models is every library user's: the
// CLI's, C's, Python's and parley.distributed's. An option a face lacks says why in its row, and
// one all four offer has nothing to explain.
TEST(OptionTable, EveryFaceOffersWhatChangesOutputOrSpeed) {
  std::size_t noted = 0;
  for (const OptionSpec& spec : diarization_options()) {
    const bool everywhere = spec.faces.cli && spec.faces.c && spec.faces.python && spec.faces.dask;
    EXPECT_EQ(everywhere, spec.faces_note.empty())
        << spec.name
        << (everywhere ? ": offered everywhere, yet noted" : ": say why in faces_note");
    noted += everywhere ? 0 : 1;
    const bool engine_setting =
        spec.target == OptionTarget::kOutput || spec.target == OptionTarget::kExecution ||
        spec.target == OptionTarget::kPlacement || spec.target == OptionTarget::kModels ||
        spec.target == OptionTarget::kLayout;
    if (engine_setting) {
      EXPECT_TRUE(spec.faces.c && spec.faces.python) << spec.name;
      // The command line spells device_id as a provider option; every other one is a flag.
      EXPECT_TRUE(spec.faces.cli || spec.name == "device_id") << spec.name;
    }
  }
  EXPECT_GT(noted, 0u);
  // What only the command line has is about one command-line run.
  for (const std::string_view name : {"link_speakers", "speakers_table"}) {
    const OptionSpec& spec = diarization_option(name);
    EXPECT_TRUE(spec.faces.cli && !spec.faces.c && !spec.faces.python && !spec.faces.dask);
  }
}

TEST(OptionTable, IdentityOptionsAreRows) {
  EXPECT_EQ(diarization_option("voiceprints").target, OptionTarget::kIdentity);
  EXPECT_EQ(diarization_option("voiceprints").cli_flag, "--voiceprints");
  EXPECT_EQ(diarization_option("identify_threshold").default_value, kDefaultIdentifyThreshold);
  EXPECT_EQ(diarization_option("identify_threshold").check("1.5"), "must be -1 to 1 (got 1.5)");
  EXPECT_EQ(diarization_option("link_speakers").type, OptionType::kFlag);
  EXPECT_EQ(diarization_option("speakers_table").type, OptionType::kPath);
  const auto json = nlohmann::json::parse(diarization_options_json());
  const auto threshold = std::find_if(json.begin(), json.end(), [](const auto& option) {
    return option["name"] == "identify_threshold";
  });
  ASSERT_NE(threshold, json.end());
  EXPECT_EQ((*threshold)["target"], "identity");
  EXPECT_EQ((*threshold)["faces"]["python"], true);
  EXPECT_EQ((*threshold)["faces"]["c"], nullptr);
  EXPECT_NE((*threshold)["faces_note"].get<std::string>().find("parley_identify"),
            std::string::npos);
}

}  // namespace
}  // namespace parley::pipeline
