#include "cli/provider_options.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace parley::cli {
namespace {

ProviderSelection parse(std::vector<std::string> arguments) {
  CLI::App app;
  ProviderArguments provider_arguments;
  add_provider_options(app, provider_arguments);
  std::reverse(arguments.begin(), arguments.end());
  app.parse(arguments);
  return provider_selection(provider_arguments);
}

std::string message_of(std::vector<std::string> arguments) {
  try {
    parse(std::move(arguments));
  } catch (const Error& error) {
    return error.what();
  } catch (const CLI::ParseError& error) {
    return std::string("parse: ") + error.what();
  }
  return "";
}

TEST(ProviderOptions, DefaultsToAuto) {
  const auto selection = parse({});
  EXPECT_TRUE(selection.choice.automatic);
  EXPECT_EQ(selection.force, runtime::ForceMode::kNone);
  EXPECT_TRUE(selection.options.empty());
}

TEST(ProviderOptions, AliasAndOptions) {
  const auto selection = parse({"--provider", "amdgpu", "--provider-option", "device_id=1",
                                "--provider-option", "migraphx_fp16_enable=1"});
  EXPECT_EQ(selection.choice.to_string(), "migraphx");
  EXPECT_EQ(selection.options.at("device_id"), "1");
  EXPECT_EQ(selection.options.at("migraphx_fp16_enable"), "1");
  EXPECT_EQ(parse({"--force-gpu"}).force, runtime::ForceMode::kGpu);
  EXPECT_EQ(parse({"--force-cpu", "--provider", "cpu"}).force, runtime::ForceMode::kCpu);
}

TEST(ProviderOptions, Contradictions) {
  EXPECT_NE(message_of({"--force-gpu", "--force-cpu"}).find("parse:"), std::string::npos);
  EXPECT_NE(message_of({"--force-gpu", "--provider", "cpu"}).find("contradicts --provider cpu"),
            std::string::npos);
  EXPECT_NE(
      message_of({"--force-cpu", "--provider", "trt"}).find("contradicts --provider tensorrt"),
      std::string::npos);
  const std::string unknown = message_of({"--provider", "metal"});
  EXPECT_EQ(unknown.rfind("--provider: unknown execution provider 'metal'", 0), 0u) << unknown;
  EXPECT_NE(unknown.find("valid names: auto, cpu"), std::string::npos) << unknown;
  EXPECT_NE(message_of({"--provider-option", "device_id"}).find("key=value"), std::string::npos);
  // The engine's message (pipeline::ProviderPlacement::validate, which the C API shows as it is),
  // in the CLI's flag names.
  EXPECT_EQ(message_of({"--provider", "cpu", "--provider-option", "a=b"}),
            "--provider-option (a=b) have no effect on the cpu provider (provider cpu); drop them");
  EXPECT_EQ(message_of({"--force-cpu", "--provider-option", "a=b"}),
            "--provider-option (a=b) have no effect on the cpu provider (--force-cpu); drop them");
}

}  // namespace
}  // namespace parley::cli
