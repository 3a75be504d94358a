// The C face against the option table (parley_options_json): every option the table gives the C
// API is a field of parley_params or parley_run_options in include/parley/parley.h, and
// parley_default_params() / parley_default_run_options() hold the table's defaults. Fails when
// either drifts from the table.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include <parley/parley.h>
#include <nlohmann/json.hpp>

namespace {

// The field names of `typedef struct NAME { ... } NAME;` in the header's text.
std::set<std::string> struct_fields(const std::string& header, const std::string& name) {
  const auto start = header.find("typedef struct " + name + " {");
  const auto end = header.find("} " + name + ";", start);
  EXPECT_NE(start, std::string::npos) << name;
  std::string body = header.substr(start, end - start);
  body = std::regex_replace(body, std::regex(R"(/\*[\s\S]*?\*/)"), "");
  std::set<std::string> fields;
  const std::regex field(R"(([A-Za-z_][A-Za-z_0-9]*)\s*;)");
  for (auto it = std::sregex_iterator(body.begin(), body.end(), field);
       it != std::sregex_iterator(); ++it) {
    fields.insert((*it)[1]);
  }
  return fields;
}

TEST(COptions, EveryCOptionIsAFieldWithTheTablesDefault) {
  std::ifstream file(PARLEY_HEADER);
  std::stringstream text;
  text << file.rdbuf();
  const std::string header = text.str();
  std::set<std::string> fields = struct_fields(header, "parley_params");
  fields.merge(struct_fields(header, "parley_run_options"));

  const parley_params params = parley_default_params();
  const parley_run_options run = parley_default_run_options();
  const auto text_or_null = [](const char* value) -> nlohmann::json {
    return value != nullptr ? nlohmann::json(value) : nlohmann::json();
  };
  // The C value of each field, as the table writes it (0 for a count means "none").
  const auto count = [](int value) -> nlohmann::json {
    return value > 0 ? nlohmann::json(value) : nlohmann::json();
  };
  const std::map<std::string, std::function<nlohmann::json()>> defaults = {
      {"models_dir", [&] { return text_or_null(params.models_dir); }},
      {"segmentation_model", [&] { return text_or_null(params.segmentation_model); }},
      {"embedding_model", [&] { return text_or_null(params.embedding_model); }},
      {"plda_dir", [&] { return text_or_null(params.plda_dir); }},
      {"provider", [&] { return text_or_null(params.provider); }},
      {"provider_options",
       [&] {
         return params.provider_options == nullptr ? nlohmann::json::array() : nlohmann::json();
       }},
      {"device_id", [&] { return nlohmann::json(params.device_id); }},
      {"step", [&] { return nlohmann::json(params.step); }},
      {"embedding_mode",
       [&] {
         return nlohmann::json(params.embedding_mode == PARLEY_EMBEDDING_SHARED ? "shared"
                                                                                : "exact");
       }},
      {"clustering",
       [&] { return nlohmann::json(params.clustering == PARLEY_CLUSTERING_VBX ? "vbx" : "ahc"); }},
      {"threads", [&] { return nlohmann::json(params.threads); }},
      {"num_speakers", [&] { return count(run.num_speakers); }},
      {"min_speakers", [&] { return count(run.min_speakers); }},
      {"max_speakers", [&] { return count(run.max_speakers); }},
  };

  // Options a C caller gives only by name (parley_options_set): parley_params stays as it is
  // (no ABI change for a new option). exclusive is also a result's (parley_result_format's
  // argument) and a batch's (parley_batch_set_exclusive).
  const std::set<std::string> named_only = {"devices",
                                            "engines",
                                            "jobs",
                                            "embedding_features",
                                            "exclusive",
                                            "ahc_threshold",
                                            "embedding_batch",
                                            "segmentation_batch",
                                            "segmentation_sessions",
                                            "segmentation_provider",
                                            "embedding_provider",
                                            "force_gpu",
                                            "force_cpu",
                                            "gpu_float16",
                                            "no_streaming",
                                            "sincnet_per_chunk",
                                            "cuda_graph"};
  for (const char* function : {"parley_batch_set_exclusive", "parley_result_format"}) {
    EXPECT_NE(header.find(function), std::string::npos) << function;
  }
  const auto options = nlohmann::json::parse(parley_options_json());
  ASSERT_FALSE(options.empty());
  std::size_t c_options = 0;
  for (const auto& option : options) {
    if (option["faces"]["c"].is_null() || named_only.contains(option["name"])) continue;
    ++c_options;
    const std::string field = option["faces"]["c"];
    EXPECT_TRUE(fields.contains(field)) << "the table gives the C API '" << option["name"]
                                        << "', but parley.h has no field " << field;
    const auto value = defaults.find(field);
    if (value == defaults.end()) {
      ADD_FAILURE() << "add the C default of " << field << " to this test";
      continue;
    }
    EXPECT_EQ(value->second(), option["default"]) << field;
  }
  EXPECT_EQ(c_options, defaults.size());
}

// The identity options reach C as the identity functions' arguments (the table's faces_note):
// the threshold's default is the table's.
TEST(COptions, IdentityThresholdIsTheTables) {
  const auto options = nlohmann::json::parse(parley_options_json());
  const auto threshold = std::find_if(options.begin(), options.end(), [](const auto& option) {
    return option["name"] == "identify_threshold";
  });
  ASSERT_NE(threshold, options.end());
  EXPECT_EQ((*threshold)["default"], PARLEY_DEFAULT_IDENTIFY_THRESHOLD);
  EXPECT_NE((*threshold)["faces_note"].get<std::string>().find("parley_identify"),
            std::string::npos);
  parley_options* named = nullptr;
  ASSERT_EQ(parley_options_new(nullptr, &named), PARLEY_OK);
  EXPECT_EQ(parley_options_set(named, "voiceprints", "team.db"), PARLEY_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(parley_last_error())
                .rfind("voiceprints: not a named option of the C API (C: parley_library_open's "
                       "path, then parley_identify per result;",
                       0),
            0u)
      << parley_last_error();
  parley_options_free(named);
}

// The C face hands its params to the engine as option values (pipeline/option_values.h): its
// messages are the engine's, in the table's words, as every face's.
TEST(COptions, ParamsAreCheckedByTheEngineInOptionNames) {
  parley_params params = parley_default_params();
  parley_diarizer* diarizer = nullptr;
  const auto message = [&] {
    EXPECT_EQ(parley_diarizer_new(&params, &diarizer), PARLEY_ERROR_INVALID_ARGUMENT);
    return std::string(parley_last_error());
  };
  params.step = 11.0;
  EXPECT_EQ(message(), "step: must be 0.1 to 10 (got 11)");
  params.step = 1.0;
  params.threads = -1;
  EXPECT_EQ(message(), "threads: must be at least 0 (got -1)");
  params.threads = 0;
  params.device_id = 1;
  const char* options[] = {"device_id=0", nullptr};
  params.provider_options = options;
  EXPECT_EQ(message(), "device_id: set twice (in device_id and in provider_options); keep one");
}

// Named options: every C option is accepted by name, the values' JSON starts at the table's
// defaults, and a diarizer made from them is checked by the engine as every face's.
TEST(COptions, NamedOptionsTakeEveryCOption) {
  parley_options* options = nullptr;
  ASSERT_EQ(parley_options_new(nullptr, &options), PARLEY_OK);
  const auto table = nlohmann::json::parse(parley_options_json());
  const auto values = nlohmann::json::parse(parley_options_values_json(options));
  std::size_t c_options = 0;
  for (const auto& option : table) {
    const std::string name = option["name"];
    if (option["faces"]["c"].is_null()) {
      EXPECT_FALSE(values.contains(name)) << name;
      EXPECT_EQ(parley_options_set(options, name.c_str(), "1"), PARLEY_ERROR_INVALID_ARGUMENT)
          << name;
      continue;
    }
    ++c_options;
    EXPECT_EQ(values.at(name), option["default"]) << name;
    const std::string type = option["type"];
    const std::string text = type == "number" || type == "integer" ? "1"
                             : type == "choice"                    ? option["choices"][0]
                             : type == "flag"                      ? "on"
                             : type == "list"                      ? "device_id=0"
                                                                   : "x";
    EXPECT_EQ(parley_options_set(options, name.c_str(), text.c_str()), PARLEY_OK)
        << name << ": " << parley_last_error();
    EXPECT_EQ(parley_options_set(options, name.c_str(), nullptr), PARLEY_OK) << name;
  }
  EXPECT_GT(c_options, 0u);
  EXPECT_EQ(nlohmann::json::parse(parley_options_values_json(options)), values);
  EXPECT_EQ(parley_options_set(options, "step", "11"), PARLEY_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(parley_last_error(), "step: must be 0.1 to 10 (got 11)");
  // The layout's options are checked as the CLI's flags and the engine's layout check them.
  EXPECT_EQ(parley_options_set(options, "jobs", "0"), PARLEY_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(parley_last_error(), "jobs: must be 1 to 256 (got 0)");
  EXPECT_EQ(parley_options_set(options, "embedding_features", "gpu"),
            PARLEY_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(parley_last_error(),
               "embedding_features: expected one of auto, host, graph (got 'gpu')");
  EXPECT_EQ(parley_options_set(options, "step", "2"), PARLEY_OK);
  EXPECT_EQ(nlohmann::json::parse(parley_options_values_json(options))["step"], 2.0);
  parley_options_free(options);

  // From params: their values, checked as the engine checks them.
  parley_params params = parley_default_params();
  params.step = 2.0;
  ASSERT_EQ(parley_options_new(&params, &options), PARLEY_OK);
  EXPECT_EQ(nlohmann::json::parse(parley_options_values_json(options))["step"], 2.0);
  ASSERT_EQ(parley_options_set(options, "threads", "0"), PARLEY_OK);
  ASSERT_EQ(parley_options_set(options, "force_cpu", "x"), PARLEY_ERROR_INVALID_ARGUMENT);
  parley_diarizer* diarizer = nullptr;
  ASSERT_EQ(parley_options_set(options, "provider_options", "device_id=0"), PARLEY_OK);
  ASSERT_EQ(parley_options_set(options, "device_id", "1"), PARLEY_OK);
  EXPECT_EQ(parley_diarizer_new_from(options, &diarizer), PARLEY_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(parley_last_error(),
               "device_id: set twice (in device_id and in provider_options); keep one");
  EXPECT_EQ(diarizer, nullptr);
  parley_options_free(options);
}

}  // namespace
