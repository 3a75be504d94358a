#include "runtime/provider_attach.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace parley::runtime {
namespace {

std::string message_of(auto&& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

TEST(Attach, CpuIsBuiltIn) {
  Ort::SessionOptions options;
  EXPECT_EQ(attach_provider(options, ProviderId::kCpu, {}, std::nullopt).method, "built in");
}

TEST(Attach, MissingProviderSaysWhatIsMissing) {
  // The CPU-only ONNX Runtime used in CI has no CUDA: the legacy call refuses, and the message
  // names the provider, ONNX Runtime's reason and what to install.
  Ort::SessionOptions options;
  const auto message = message_of([&] {
    attach_provider(options, ProviderId::kCuda, {{"device_id", "0"}}, std::nullopt);
  });
  EXPECT_NE(message.find("execution provider cuda"), std::string::npos) << message;
  EXPECT_NE(message.find("CUDAExecutionProvider"), std::string::npos) << message;
  EXPECT_NE(message.find("install the GPU build of ONNX Runtime"), std::string::npos) << message;
}

TEST(Attach, UnloadablePluginLibraryIsReportedWithTheLegacyError) {
  Ort::SessionOptions options;
  const auto message = message_of([&] {
    attach_provider(options, ProviderId::kMigraphx, {{"device_id", "0"}},
                    std::filesystem::path("/nonexistent/libonnxruntime_providers_migraphx.so"));
  });
  EXPECT_NE(message.find("plugin library /nonexistent/libonnxruntime_providers_migraphx.so"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("legacy call"), std::string::npos) << message;
  // The failed registration is remembered, not retried.
  const auto again = register_plugin_library(ProviderId::kMigraphx,
                                             "/nonexistent/libonnxruntime_providers_migraphx.so");
  EXPECT_FALSE(again.registered);
  EXPECT_FALSE(again.error.empty());
}

TEST(Attach, BadDeviceIdIsRejectedBeforeOrtSeesIt) {
  Ort::SessionOptions options;
  const auto message = message_of([&] {
    attach_provider(options, ProviderId::kRocm, {{"device_id", "first"}}, std::nullopt);
  });
  EXPECT_NE(message.find("device_id=first"), std::string::npos) << message;
}

TEST(Attach, CpuDevicesAreListed) {
  const auto devices = ep_devices_for(ProviderId::kCpu);
  ASSERT_FALSE(devices.empty());
  EXPECT_FALSE(devices[0].is_gpu);
  EXPECT_FALSE(devices[0].description.empty());
}

}  // namespace
}  // namespace parley::runtime
