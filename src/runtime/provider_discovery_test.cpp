#include "runtime/provider_discovery.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace parley::runtime {
namespace {

DiscoveryFacts cpu_only_linux() {
  DiscoveryFacts facts;
  facts.os = "linux";
  facts.ort_version = "1.29.0";
  facts.ort_library_dir = "/opt/ort/lib";
  facts.ort_providers = {"CPUExecutionProvider"};
  facts.search_dirs = {{"/custom/providers", "$PARLEY_PROVIDER_PATH"},
                       {"/opt/ort/lib", "next to libonnxruntime"}};
  facts.cpu_name = "Test CPU 9000";
  return facts;
}

std::string message_of(auto&& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

TEST(Discovery, CpuOnlyMachineExplainsEveryProvider) {
  const auto statuses = assess_providers(cpu_only_linux());
  ASSERT_EQ(statuses.size(), all_provider_traits().size());
  const auto& cpu = find_status(statuses, ProviderId::kCpu);
  EXPECT_TRUE(cpu.available);
  EXPECT_EQ(cpu.devices, std::vector<std::string>{"Test CPU 9000"});
  const auto& cuda = find_status(statuses, ProviderId::kCuda);
  EXPECT_FALSE(cuda.available);
  EXPECT_NE(cuda.reason.find("libonnxruntime_providers_cuda.so not found in /custom/providers "
                             "($PARLEY_PROVIDER_PATH), /opt/ort/lib (next to libonnxruntime)"),
            std::string::npos)
      << cuda.reason;
  EXPECT_NE(cuda.reason.find("install the GPU build of ONNX Runtime"), std::string::npos);
  EXPECT_NE(cuda.reason.find("PARLEY_PROVIDER_PATH"), std::string::npos);
  EXPECT_NE(find_status(statuses, ProviderId::kMigraphx)
                .reason.find("libonnxruntime_providers_migraphx.so not found"),
            std::string::npos);
  EXPECT_NE(find_status(statuses, ProviderId::kCoreMl).reason.find("runs only on macos"),
            std::string::npos);
  EXPECT_NE(find_status(statuses, ProviderId::kDml).reason.find("runs only on windows"),
            std::string::npos);
  for (const auto& status : statuses) {
    if (status.id != ProviderId::kCpu) {
      EXPECT_FALSE(status.reason.empty());
    }
  }
}

TEST(Discovery, PluginLibraryWithDevicesIsAvailable) {
  auto facts = cpu_only_linux();
  LibraryFacts library;
  library.file = "/custom/providers/libonnxruntime_providers_cuda.so";
  library.origin = "$PARLEY_PROVIDER_PATH";
  library.identity = "libonnxruntime_providers_cuda.so 230000000 bytes mtime 1";
  library.plugin_registered = true;
  library.plugin_devices = {"NVIDIA GPU (0x10de:0x2330)"};
  library.provider_version = "1.29.0";
  facts.libraries[ProviderId::kCuda] = library;
  facts.gpus = {{"nvidia", "NVIDIA H100 80GB HBM3", "550.54"}};
  const auto cuda = find_status(assess_providers(facts), ProviderId::kCuda);
  EXPECT_TRUE(cuda.available) << cuda.reason;
  EXPECT_EQ(cuda.library, library.file);
  EXPECT_EQ(cuda.devices, library.plugin_devices);
  EXPECT_NE(cuda.reason.find("plugin library"), std::string::npos);
  EXPECT_EQ(cuda.environment.device, "NVIDIA H100 80GB HBM3 driver 550.54");
  EXPECT_NE(cuda.environment.provider_library.find("version 1.29.0"), std::string::npos);

  facts.libraries[ProviderId::kCuda].plugin_devices.clear();
  const auto no_device = find_status(assess_providers(facts), ProviderId::kCuda);
  EXPECT_FALSE(no_device.available);
  EXPECT_NE(no_device.reason.find("offers no NVIDIA GPU"), std::string::npos) << no_device.reason;
}

TEST(Discovery, LibraryThatCannotLoadSaysWhy) {
  auto facts = cpu_only_linux();
  LibraryFacts library;
  library.file = "/opt/ort/lib/libonnxruntime_providers_cuda.so";
  library.plugin_error = "Failed to load library";
  library.load_error = "libcudnn.so.9: cannot open shared object file: No such file or directory";
  facts.libraries[ProviderId::kCuda] = library;
  const auto cuda = find_status(assess_providers(facts), ProviderId::kCuda);
  EXPECT_FALSE(cuda.available);
  EXPECT_NE(cuda.reason.find("was found but cannot be loaded: libcudnn.so.9"), std::string::npos)
      << cuda.reason;
}

TEST(Discovery, LegacyLibraryNeedsOrtFolderAndDevice) {
  auto facts = cpu_only_linux();
  LibraryFacts library;
  library.file = "/custom/providers/libonnxruntime_providers_migraphx.so";
  library.plugin_error = "Failed to get symbol CreateEpFactories";
  facts.libraries[ProviderId::kMigraphx] = library;
  const auto elsewhere = find_status(assess_providers(facts), ProviderId::kMigraphx);
  EXPECT_FALSE(elsewhere.available);
  EXPECT_NE(elsewhere.reason.find("loads legacy provider libraries only from its own folder"),
            std::string::npos)
      << elsewhere.reason;

  facts.ort_library_dir.clear();  // cannot tell where ORT is: do not second-guess
  const auto no_gpu = find_status(assess_providers(facts), ProviderId::kMigraphx);
  EXPECT_FALSE(no_gpu.available);
  EXPECT_NE(no_gpu.reason.find("no AMD GPU was found"), std::string::npos) << no_gpu.reason;

  facts.gpus = {{"amd", "AMD Instinct MI300X", "6.8.5"}};
  const auto ok = find_status(assess_providers(facts), ProviderId::kMigraphx);
  EXPECT_TRUE(ok.available) << ok.reason;
  EXPECT_EQ(ok.devices, std::vector<std::string>{"AMD Instinct MI300X (driver 6.8.5)"});
}

TEST(Discovery, BuiltInProvidersFollowOrtBuild) {
  auto facts = cpu_only_linux();
  facts.os = "macos";
  EXPECT_NE(find_status(assess_providers(facts), ProviderId::kCoreMl)
                .reason.find("was built without CoreMLExecutionProvider"),
            std::string::npos);
  facts.ort_providers.push_back("CoreMLExecutionProvider");
  EXPECT_TRUE(find_status(assess_providers(facts), ProviderId::kCoreMl).available);
  EXPECT_NE(find_status(assess_providers(facts), ProviderId::kCuda).reason.find("runs only on"),
            std::string::npos);
}

TEST(Resolve, ExplicitUnavailableProviderIsAnErrorWithTheReason) {
  const auto statuses = assess_providers(cpu_only_linux());
  OnceNotices quiet(nullptr);
  const auto message =
      message_of([&] { resolve_provider(ProviderChoice::parse("cuda"), statuses, quiet); });
  EXPECT_NE(
      message.find("execution provider cuda: unavailable: libonnxruntime_providers_cuda.so not "
                   "found in /custom/providers"),
      std::string::npos)
      << message;
  EXPECT_NE(message.find("install the GPU build of ONNX Runtime"), std::string::npos) << message;
  // Aliases are reported by their canonical name.
  const auto alias =
      message_of([&] { resolve_provider(ProviderChoice::parse("amdgpu"), statuses, quiet); });
  EXPECT_NE(alias.find("execution provider migraphx: unavailable"), std::string::npos) << alias;
  EXPECT_EQ(resolve_provider(ProviderChoice::parse("cpu"), statuses, quiet).provider,
            ProviderId::kCpu);
}

// Every plain CPU run warned that no GPU provider could be used: on a machine without a GPU that
// is nothing to act on, and it is said only at debug level.
TEST(Resolve, AutoFallsBackToCpuSilentlyWithoutAGpu) {
  const auto statuses = assess_providers(cpu_only_linux());
  std::vector<std::string> said;
  OnceNotices notices_for_test([&](const std::string& message) { said.push_back(message); });
  const auto resolution = resolve_provider(ProviderChoice{}, statuses, notices_for_test);
  EXPECT_EQ(resolution.provider, ProviderId::kCpu);
  EXPECT_FALSE(resolution.accelerator);
  EXPECT_NE(resolution.problem.find("cuda: libonnxruntime_providers_cuda.so not found"),
            std::string::npos);
  EXPECT_EQ(resolution.problem.find("coreml"), std::string::npos);  // not on this OS
  EXPECT_TRUE(said.empty()) << said.front();
}

// A GPU that no provider can drive is worth a warning, once.
TEST(Resolve, AutoFallsBackToCpuAndSaysSoOnceWhenAGpuGoesUnused) {
  auto facts = cpu_only_linux();
  facts.gpus.push_back({"nvidia", "NVIDIA H100", "550.54"});
  const auto statuses = assess_providers(facts);
  std::vector<std::string> said;
  OnceNotices notices_for_test([&](const std::string& message) { said.push_back(message); });
  for (int call = 0; call < 3; ++call) {
    const auto resolution = resolve_provider(ProviderChoice{}, statuses, notices_for_test);
    EXPECT_EQ(resolution.provider, ProviderId::kCpu);
  }
  ASSERT_EQ(said.size(), 1u);
  EXPECT_NE(said[0].find("has a GPU but no GPU provider can use it, running on the CPU"),
            std::string::npos)
      << said[0];
}

TEST(Resolve, AutoPicksTheBestAvailableAccelerator) {
  auto facts = cpu_only_linux();
  LibraryFacts library;
  library.file = "/custom/providers/libonnxruntime_providers_migraphx.so";
  library.plugin_registered = true;
  library.plugin_devices = {"AMD GPU"};
  facts.libraries[ProviderId::kMigraphx] = library;
  OnceNotices quiet(nullptr);
  const auto resolution = resolve_provider(ProviderChoice{}, assess_providers(facts), quiet);
  EXPECT_EQ(resolution.provider, ProviderId::kMigraphx);
  EXPECT_EQ(resolution.accelerator, ProviderId::kMigraphx);
}

TEST(Discovery, ThisMachine) {
  const auto& statuses = provider_statuses();
  EXPECT_TRUE(find_status(statuses, ProviderId::kCpu).available);
  const auto& cpu = find_status(statuses, ProviderId::kCpu);
  EXPECT_FALSE(cpu.environment.ort_version.empty());
  for (const auto& status : statuses) {
    if (!status.available) {
      EXPECT_FALSE(status.reason.empty()) << provider_name(status.id);
    }
  }
  EXPECT_EQ(library_file_name("onnxruntime_providers_cuda", "windows"),
            "onnxruntime_providers_cuda.dll");
  EXPECT_EQ(library_file_name("onnxruntime_providers_cuda", "macos"),
            "libonnxruntime_providers_cuda.dylib");
}

}  // namespace
}  // namespace parley::runtime
