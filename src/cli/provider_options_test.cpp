#include "cli/provider_options.h"

#include <gtest/gtest.h>

#include "cli/flag_names.h"
#include "core/error.h"
#include "pipeline/option_values.h"

namespace parley::cli {
namespace {

// The flags as the CLI hands them to the engine, which alone decides what they mean together.
pipeline::ProviderPlacement parse(std::vector<std::string> arguments) {
  CLI::App app;
  ProviderArguments provider_arguments;
  add_provider_options(app, provider_arguments);
  std::reverse(arguments.begin(), arguments.end());
  app.parse(arguments);
  return pipeline::provider_placement(provider_values(provider_arguments));
}

// What the user reads: the engine's message in flag names (main.cpp's with_flag_names).
std::string message_of(std::vector<std::string> arguments) {
  try {
    parse(std::move(arguments));
  } catch (const Error& error) {
    return with_flag_names(error.what());
  } catch (const CLI::ParseError& error) {
    return std::string("parse: ") + error.what();
  }
  return "";
}

TEST(ProviderOptions, DefaultsToAuto) {
  const auto placement = parse({});
  EXPECT_TRUE(placement.choice.automatic);
  EXPECT_EQ(placement.force, runtime::ForceMode::kNone);
  EXPECT_TRUE(placement.options.empty());
}

TEST(ProviderOptions, AliasAndOptions) {
  const auto placement = parse({"--provider", "amdgpu", "--provider-option", "device_id=1",
                                "--provider-option", "migraphx_fp16_enable=1"});
  EXPECT_EQ(placement.choice.to_string(), "migraphx");
  EXPECT_EQ(placement.options.at("device_id"), "1");
  EXPECT_EQ(placement.options.at("migraphx_fp16_enable"), "1");
  EXPECT_EQ(parse({"--force-gpu"}).force, runtime::ForceMode::kGpu);
  EXPECT_EQ(parse({"--force-cpu", "--provider", "cpu"}).force, runtime::ForceMode::kCpu);
}

TEST(ProviderOptions, ContradictionsAreTheEnginesInFlagNames) {
  EXPECT_NE(message_of({"--force-gpu", "--force-cpu"}).find("parse:"), std::string::npos);
  EXPECT_EQ(message_of({"--force-gpu", "--provider", "cpu"}),
            "--force-gpu: contradicts --provider cpu; name a GPU provider or use --provider auto");
  EXPECT_EQ(message_of({"--force-cpu", "--provider", "trt"}),
            "--force-cpu: contradicts --provider tensorrt; drop one of them");
  const std::string unknown = message_of({"--provider", "metal"});
  EXPECT_EQ(unknown.rfind("--provider: unknown execution provider 'metal'", 0), 0u) << unknown;
  EXPECT_NE(unknown.find("valid names: auto, cpu"), std::string::npos) << unknown;
  const std::string malformed = message_of({"--provider-option", "device_id"});
  EXPECT_EQ(malformed.rfind("--provider-option: ", 0), 0u) << malformed;
  EXPECT_NE(malformed.find("key=value"), std::string::npos) << malformed;
  // pipeline::ProviderPlacement::validate's message, which the C API shows as it is.
  EXPECT_EQ(message_of({"--provider", "cpu", "--provider-option", "a=b"}),
            "--provider-option (a=b) have no effect on the cpu provider (--provider cpu); drop "
            "them");
  EXPECT_EQ(message_of({"--force-cpu", "--provider-option", "a=b"}),
            "--provider-option (a=b) have no effect on the cpu provider (--force-cpu); drop them");
}

}  // namespace
}  // namespace parley::cli
