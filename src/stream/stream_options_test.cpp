#include "stream/stream_options.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "core/error.h"

namespace parley::stream {
namespace {

std::string failure(const nlohmann::json& values) {
  StreamConfig config;
  try {
    apply_stream_options(values, config);
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

// Every bound of the table is StreamConfig's: the bound itself passes, a value past it is refused
// with the table's message, whichever face set it.
TEST(StreamOptions, ValidateChecksTheTablesBounds) {
  for (const pipeline::OptionSpec& spec : stream_options()) {
    if (!spec.minimum || !spec.maximum || spec.name == "channels") continue;
    const double step = spec.type == pipeline::OptionType::kInteger ? 1.0 : 0.01;
    // The latency must be at least the step: each bound of one tried with the other out of the
    // way.
    nlohmann::json base = nlohmann::json::object();
    if (spec.name == "latency") base["step"] = 0.1;
    if (spec.name == "step") base["latency"] = 5.0;
    for (const double bound : {*spec.minimum, *spec.maximum}) {
      nlohmann::json values = base;
      values[spec.name] = bound;
      EXPECT_EQ(failure(values), "") << spec.name << " " << bound;
    }
    nlohmann::json below = base;
    below[spec.name] = *spec.minimum - step;
    EXPECT_NE(failure(below).find(spec.name + ": must be"), std::string::npos) << spec.name;
    nlohmann::json above = base;
    above[spec.name] = *spec.maximum + step;
    EXPECT_NE(failure(above).find(spec.name + ": must be"), std::string::npos) << spec.name;
  }
  StreamConfig config;
  config.latency_seconds = 9.0;
  try {
    config.validate();
    FAIL() << "latency 9 passed";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(), "latency: must be 0.5 to 5 (got 9)");
  }
}

TEST(StreamOptions, NamesAliasesAndChannels) {
  StreamConfig config;
  apply_stream_options({{"rate", 8000}, {"embedding", "window"}, {"max_speakers", 3}}, config);
  EXPECT_EQ(config.sample_rate, 8000.0);
  EXPECT_EQ(config.embedding, StreamEmbedding::kWindow);
  EXPECT_EQ(config.max_speakers, 3u);
  EXPECT_EQ(&stream_option("rate"), &stream_option("sample_rate"));
  EXPECT_EQ(query_parameter_name(stream_option("sample_rate")), "rate");
  EXPECT_EQ(query_parameter_name(stream_option("step")), "step");
  EXPECT_NE(failure({{"colour", 1}}).find("unknown stream option 'colour'"), std::string::npos);
  // Channels belong to the samples: checked here, set by whoever pushes them.
  EXPECT_EQ(failure({{"channels", kMaxStreamChannels}}), "");
  EXPECT_NE(failure({{"channels", kMaxStreamChannels + 1}}).find("channels: must be 1 to 64"),
            std::string::npos);
}

// The C face: parley_stream_params has a field for every option the table gives C but channels
// (an argument of each push), and no other.
TEST(StreamOptions, CStreamParamsAreTheTablesCOptions) {
  std::ifstream file(PARLEY_HEADER);
  std::stringstream text;
  text << file.rdbuf();
  const std::string header = text.str();
  const auto start = header.find("typedef struct parley_stream_params {");
  const auto end = header.find("} parley_stream_params;", start);
  ASSERT_NE(start, std::string::npos);
  ASSERT_NE(end, std::string::npos);
  const std::string body =
      std::regex_replace(header.substr(start, end - start), std::regex(R"(/\*[\s\S]*?\*/)"), "");
  std::set<std::string> fields;
  const std::regex field(R"(([A-Za-z_][A-Za-z_0-9]*)\s*;)");
  for (auto it = std::sregex_iterator(body.begin(), body.end(), field);
       it != std::sregex_iterator(); ++it) {
    fields.insert((*it)[1]);
  }
  std::set<std::string> offered;
  for (const pipeline::OptionSpec& spec : stream_options()) {
    if (spec.faces.c && spec.name != "channels") offered.emplace(spec.c_field());
  }
  EXPECT_EQ(fields, offered);
  EXPECT_NE(header.find("#define PARLEY_MAX_STREAM_CHANNELS " + std::to_string(kMaxStreamChannels) +
                        "\n"),
            std::string::npos);
}

}  // namespace
}  // namespace parley::stream
