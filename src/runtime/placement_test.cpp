#include "runtime/placement.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "core/error.h"

namespace parley::runtime {
namespace {
namespace fs = std::filesystem;

class PlacementTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("parley_placement_test_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    DiscoveryFacts facts;
    facts.os = "linux";
    facts.ort_version = "1.29.0";
    facts.ort_providers = {"CPUExecutionProvider"};
    LibraryFacts library;
    library.file = "/opt/rocm/lib/libonnxruntime_providers_migraphx.so";
    library.identity = "libonnxruntime_providers_migraphx.so 1 bytes mtime 1";
    library.plugin_registered = true;
    library.plugin_devices = {"AMD Instinct MI300X"};
    facts.libraries[ProviderId::kMigraphx] = library;
    gpu_statuses_ = assess_providers(facts);
    facts.libraries.clear();
    cpu_statuses_ = assess_providers(facts);
    // The same machine's GPU with no provider library to drive it.
    facts.gpus.push_back({"amd", "AMD Instinct MI300X", "6.4"});
    unused_gpu_statuses_ = assess_providers(facts);
  }
  void TearDown() override { fs::remove_all(root_); }

  ModelPlacementRequest request(std::size_t items) const {
    ModelPlacementRequest r;
    r.model = "/models/embedding.onnx";
    r.model_sha256 = "0123abcd";
    r.shapes_for_batch = [](std::size_t batch) {
      return std::vector<InputShape>{{"fbank", {static_cast<std::int64_t>(batch), 998, 80}}};
    };
    r.items = items;
    r.buckets = Buckets({1, 2, 4, 8});
    return r;
  }

  // Publishes a compiled entry for `batch` as warm-cache would.
  void compile(CompileCache& cache, std::size_t batch) const {
    const auto& status = find_status(gpu_statuses_, ProviderId::kMigraphx);
    const auto r = request(1);
    auto build = cache.begin_build(
        make_compile_key(r.model_sha256, "embedding", r.shapes_for_batch(batch), status.id,
                         effective_options(status.id, {}), status.environment));
    std::ofstream(build.artifacts_dir() / "program.mxr") << "compiled";
    build.commit(2.0);
  }

  fs::path root_;
  std::vector<ProviderStatus> gpu_statuses_;
  std::vector<ProviderStatus> cpu_statuses_;
  std::vector<ProviderStatus> unused_gpu_statuses_;
};

TEST_F(PlacementTest, ColdShapesRunOnTheCpuUntilCompiled) {
  CompileCache cache(root_);
  CostModelStore costs(root_, "test-host");
  OnceNotices quiet(nullptr);
  auto decision = place_model(request(20), cache, costs, gpu_statuses_, quiet);
  EXPECT_FALSE(decision.on_accelerator);
  EXPECT_NE(decision.reason.find("not compiled for migraphx yet"), std::string::npos)
      << decision.reason;
  for (std::size_t batch : {1, 2, 4, 8}) compile(cache, batch);
  EXPECT_EQ(compiled_batches(cache, find_status(gpu_statuses_, ProviderId::kMigraphx), request(1)),
            (std::vector<std::size_t>{1, 2, 4, 8}));
  decision = place_model(request(20), cache, costs, gpu_statuses_, quiet);
  EXPECT_TRUE(decision.on_accelerator) << decision.reason;
  EXPECT_EQ(decision.provider, ProviderId::kMigraphx);
}

TEST_F(PlacementTest, StoredCostsKeepSmallJobsOnTheCpu) {
  CompileCache cache(root_);
  for (std::size_t batch : {1, 2, 4, 8}) compile(cache, batch);
  CostModelStore costs(root_, "test-host");
  CostConstants constants;
  constants.cpu_seconds_per_item = 0.1;
  constants.gpu_seconds_per_item = 0.01;
  constants.gpu_seconds_per_call = 0.02;
  constants.gpu_session_load_seconds = 0.5;
  costs.put(ProviderId::kMigraphx, "0123abcd", "embedding", constants);
  OnceNotices quiet(nullptr);
  EXPECT_FALSE(place_model(request(2), cache, costs, gpu_statuses_, quiet).on_accelerator);
  EXPECT_TRUE(place_model(request(40), cache, costs, gpu_statuses_, quiet).on_accelerator);
  auto forced = request(2);
  forced.force = ForceMode::kGpu;
  EXPECT_TRUE(place_model(forced, cache, costs, gpu_statuses_, quiet).on_accelerator);
  forced.force = ForceMode::kCpu;
  EXPECT_FALSE(place_model(forced, cache, costs, gpu_statuses_, quiet).on_accelerator);
}

TEST_F(PlacementTest, NoGpuFallsBackOnceOrFailsWhenForced) {
  CompileCache cache(root_);
  CostModelStore costs(root_, "test-host");
  std::vector<std::string> said;
  OnceNotices recording([&](const std::string& message) { said.push_back(message); });
  // Without a GPU, running on the CPU is no news (debug level only, not a notice).
  for (int call = 0; call < 3; ++call) {
    EXPECT_FALSE(place_model(request(20), cache, costs, cpu_statuses_, recording).on_accelerator);
  }
  EXPECT_TRUE(said.empty());
  // A GPU that no provider drives is said once.
  for (int call = 0; call < 3; ++call) {
    EXPECT_FALSE(
        place_model(request(20), cache, costs, unused_gpu_statuses_, recording).on_accelerator);
  }
  EXPECT_EQ(said.size(), 1u);
  auto forced = request(20);
  forced.force = ForceMode::kGpu;
  EXPECT_THROW(place_model(forced, cache, costs, cpu_statuses_, recording), Error);
  auto named = request(20);
  named.choice = ProviderChoice::parse("amdgpu");
  try {
    place_model(named, cache, costs, cpu_statuses_, recording);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("execution provider migraphx: unavailable"),
              std::string::npos)
        << error.what();
  }
  EXPECT_EQ(said.size(), 1u);
}

}  // namespace
}  // namespace parley::runtime
