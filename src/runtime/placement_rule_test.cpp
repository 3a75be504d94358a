#include "runtime/placement.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace parley::runtime {
namespace {

constexpr std::uintmax_t kMiB = 1024 * 1024;

CostConstants costs() {
  CostConstants constants;
  constants.cpu_seconds_per_item = 0.10;
  constants.gpu_seconds_per_item = 0.01;
  constants.gpu_seconds_per_call = 0.02;
  constants.gpu_session_load_seconds = 0.50;
  return constants;
}

struct Case {
  std::string name;
  std::string provider;  // --provider
  ForceMode force;
  std::optional<ProviderId> accelerator;
  std::size_t items;
  std::vector<std::size_t> compiled;
  bool with_costs;
  std::uintmax_t free_mib;  // 0 = unknown
  // Expected:
  bool on_accelerator;
  std::size_t max_call;  // largest bucket in the plan
  std::string reason_part;
};

PlacementRequest request_for(const Case& c) {
  PlacementRequest request;
  request.choice = ProviderChoice::parse(c.provider);
  request.force = c.force;
  request.accelerator = c.accelerator;
  request.accelerator_problem = "cuda: libonnxruntime_providers_cuda.so not found";
  request.model_name = "embedding";
  request.items = c.items;
  request.buckets = Buckets({1, 2, 4, 8});
  request.compiled_batches = c.compiled;
  if (c.with_costs) request.costs = costs();
  if (c.free_mib > 0) request.memory = DeviceMemory{16384 * kMiB, c.free_mib * kMiB, "test"};
  request.memory_need = MemoryNeed{100 * kMiB, 10 * kMiB};
  return request;
}

const auto kMig = ProviderId::kMigraphx;
const auto kCuda = ProviderId::kCuda;
const std::vector<std::size_t> kAll = {1, 2, 4, 8};

TEST(Placement, DecisionTable) {
  const std::vector<Case> cases = {
      {"force-cpu wins over everything", "auto", ForceMode::kCpu, kMig, 20, kAll, true, 0, false, 8,
       "CPU (forced)"},
      {"provider cpu",
       "cpu",
       ForceMode::kNone,
       std::nullopt,
       20,
       {},
       false,
       0,
       false,
       8,
       "provider cpu requested"},
      {"auto without accelerator",
       "auto",
       ForceMode::kNone,
       std::nullopt,
       20,
       {},
       false,
       0,
       false,
       8,
       "no GPU provider"},
      {"auto, cold shapes stay on the CPU",
       "auto",
       ForceMode::kNone,
       kMig,
       20,
       {1, 2},
       true,
       0,
       false,
       8,
       "batch sizes 8,4 are not compiled"},
      {"auto, compiled, large job", "auto", ForceMode::kNone, kMig, 20, kAll, true, 0, true, 8,
       "-> GPU"},
      {"auto, compiled, small job", "auto", ForceMode::kNone, kMig, 2, kAll, true, 0, false, 2,
       "-> CPU"},
      {"auto, no constants yet", "auto", ForceMode::kNone, kMig, 2, kAll, false, 0, true, 2,
       "no cost constants"},
      {"auto, dynamic provider needs no compile",
       "auto",
       ForceMode::kNone,
       kCuda,
       20,
       {},
       true,
       0,
       true,
       8,
       "-> GPU"},
      // 90% of 180 MiB = 162 MiB: a batch of 8 needs 180 MiB, of 4 140 MiB.
      {"auto, memory shrinks batch", "auto", ForceMode::kNone, kMig, 20, kAll, true, 180, true, 4,
       "-> GPU"},
      {"auto, memory too low", "auto", ForceMode::kNone, kMig, 20, kAll, true, 50, false, 8,
       "even a batch of 1"},
      {"force-gpu compiles cold shapes",
       "auto",
       ForceMode::kGpu,
       kMig,
       20,
       {},
       false,
       0,
       true,
       8,
       "compiling batch sizes 8,4 first"},
      {"force-gpu ignores the cost model", "auto", ForceMode::kGpu, kMig, 1, kAll, true, 0, true, 1,
       "GPU forced"},
      {"explicit provider is strict", "amdgpu", ForceMode::kNone, kMig, 1, kAll, true, 0, true, 1,
       "provider migraphx requested"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const auto decision = place(request_for(c));
    EXPECT_EQ(decision.on_accelerator, c.on_accelerator) << decision.reason;
    EXPECT_EQ(decision.provider, c.on_accelerator ? *c.accelerator : ProviderId::kCpu);
    ASSERT_FALSE(decision.plan.empty());
    std::size_t largest = 0;
    std::size_t covered = 0;
    for (const auto& slice : decision.plan) {
      largest = std::max(largest, slice.bucket);
      covered += slice.count;
    }
    EXPECT_EQ(covered, c.items);
    EXPECT_EQ(largest, c.max_call) << decision.reason;
    EXPECT_NE(decision.reason.find(c.reason_part), std::string::npos) << decision.reason;
  }
}

TEST(Placement, CpuPlansAreNotPadded) {
  Case c{"", "cpu", ForceMode::kNone, std::nullopt, 11, {}, false, 0, false, 8, ""};
  for (const auto& slice : place(request_for(c)).plan) EXPECT_EQ(slice.padding(), 0u);
  Case gpu{"", "auto", ForceMode::kNone, kMig, 11, kAll, false, 0, true, 8, ""};
  const auto plan = place(request_for(gpu)).plan;
  EXPECT_EQ(plan.back().bucket, 4u);
  EXPECT_EQ(plan.back().count, 3u);
}

TEST(Placement, StrictRequestsFailWithTheReason) {
  Case no_gpu{"", "auto", ForceMode::kGpu, std::nullopt, 4, {}, false, 0, false, 4, ""};
  try {
    place(request_for(no_gpu));
    FAIL() << "expected an error";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("GPU forced: no GPU provider can be used"), std::string::npos);
    EXPECT_NE(message.find("libonnxruntime_providers_cuda.so not found"), std::string::npos);
  }
  Case no_memory{"", "migraphx", ForceMode::kNone, kMig, 4, kAll, false, 50, false, 4, ""};
  try {
    place(request_for(no_memory));
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("even a batch of 1"), std::string::npos);
  }
}

TEST(Placement, FallbackAndShrinkAreAnnounced) {
  Case fallback{"", "auto", ForceMode::kNone, std::nullopt, 4, {}, false, 0, false, 4, ""};
  EXPECT_NE(place(request_for(fallback)).notice.find("running on the CPU"), std::string::npos);
  Case shrink{"", "auto", ForceMode::kNone, kMig, 20, kAll, true, 180, true, 4, ""};
  EXPECT_NE(place(request_for(shrink)).notice.find("batches of 4"), std::string::npos);
  Case plain{"", "auto", ForceMode::kNone, kMig, 20, kAll, true, 0, true, 8, ""};
  EXPECT_TRUE(place(request_for(plain)).notice.empty());
}

}  // namespace
}  // namespace parley::runtime
