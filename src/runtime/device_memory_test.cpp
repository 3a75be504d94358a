#include "runtime/device_memory.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace parley::runtime {
namespace {

constexpr std::uintmax_t kMiB = 1024 * 1024;

TEST(DeviceMemory, BatchFitsUnchanged) {
  const MemoryNeed need{100 * kMiB, 10 * kMiB};
  const auto fit = fit_batch_to_memory(Buckets({1, 2, 4, 8, 16, 32}), 32,
                                       DeviceMemory{8192 * kMiB, 4096 * kMiB, "test"}, need);
  EXPECT_TRUE(fit.fits);
  EXPECT_FALSE(fit.shrunk);
  EXPECT_EQ(fit.max_batch, 32u);
  EXPECT_TRUE(fit.message.empty());
}

TEST(DeviceMemory, LowMemoryShrinksTheBatch) {
  const MemoryNeed need{100 * kMiB, 10 * kMiB};
  // 90% of 300 MiB = 270 MiB: 16 items need 260 MiB, 32 need 420 MiB.
  const auto fit = fit_batch_to_memory(Buckets({1, 2, 4, 8, 16, 32}), 32,
                                       DeviceMemory{8192 * kMiB, 300 * kMiB, "test"}, need);
  EXPECT_TRUE(fit.fits);
  EXPECT_TRUE(fit.shrunk);
  EXPECT_EQ(fit.max_batch, 16u);
  EXPECT_NE(fit.message.find("300 MiB free"), std::string::npos) << fit.message;
  EXPECT_NE(fit.message.find("batches of 16"), std::string::npos) << fit.message;
}

TEST(DeviceMemory, NothingFitsMeansNoGpu) {
  const MemoryNeed need{100 * kMiB, 10 * kMiB};
  const auto fit = fit_batch_to_memory(Buckets({1, 2, 4}), 4,
                                       DeviceMemory{8192 * kMiB, 50 * kMiB, "test"}, need);
  EXPECT_FALSE(fit.fits);
  EXPECT_EQ(fit.max_batch, 0u);
  EXPECT_NE(fit.message.find("even a batch of 1"), std::string::npos) << fit.message;
}

TEST(DeviceMemory, UnknownMemoryKeepsThePlannedBatch) {
  const auto fit = fit_batch_to_memory(Buckets({1, 2, 4, 8}), 6, std::nullopt, MemoryNeed{1, 1});
  EXPECT_TRUE(fit.fits);
  EXPECT_EQ(fit.max_batch, 4u);  // the largest bucket not above the planned batch
}

TEST(DeviceMemory, EstimateAndFormat) {
  const auto need = estimate_memory_need(6 * kMiB, 640000, 16492, 8.0);
  EXPECT_EQ(need.fixed_bytes, 12 * kMiB);
  EXPECT_EQ(need.bytes_per_item, (640000u + 16492u) * 8u);
  EXPECT_EQ(format_bytes(1536 * kMiB), "1.5 GiB");
  EXPECT_EQ(format_bytes(300 * kMiB), "300 MiB");
  EXPECT_EQ(format_bytes(17), "17 B");
  // The CPU has no device memory to check.
  EXPECT_FALSE(query_device_memory(ProviderId::kCpu, 0));
}

TEST(DeviceMemory, SessionsThatFit) {
  const DeviceMemory memory{8192 * kMiB, 2048 * kMiB, "test"};
  EXPECT_EQ(sessions_that_fit(memory, 500 * kMiB, 4), 3);  // 0.9 x 2048 / 500 = 3.7
  EXPECT_EQ(sessions_that_fit(memory, 100 * kMiB, 4), 4);
  EXPECT_EQ(sessions_that_fit(memory, 4096 * kMiB, 4), 1) << "never fewer than one";
  EXPECT_EQ(sessions_that_fit(std::nullopt, 4096 * kMiB, 4), 4) << "unknown memory: as asked";
  EXPECT_EQ(device_id_option({{"device_id", "2"}}), 2);
  EXPECT_EQ(device_id_option({}), 0);
  EXPECT_THROW(device_id_option({{"device_id", "gpu"}}), Error);
}

// `parley bench` and the server's metrics watch the same device: the embedding's accelerator, else
// the segmentation's, each with its own network's device number.
TEST(DeviceMemory, WatchedDeviceIsTheEmbeddingsAcceleratorFirst) {
  const ProviderOptions first{{"device_id", "1"}};
  const ProviderOptions second{{"device_id", "2"}};
  const auto both = watched_device(ProviderId::kCuda, first, ProviderId::kCuda, second);
  ASSERT_TRUE(both);
  EXPECT_EQ(both->provider, ProviderId::kCuda);
  EXPECT_EQ(both->device_id, 2);
  const auto segmentation = watched_device(ProviderId::kRocm, first, ProviderId::kCpu, second);
  ASSERT_TRUE(segmentation);
  EXPECT_EQ(segmentation->provider, ProviderId::kRocm);
  EXPECT_EQ(segmentation->device_id, 1);
  EXPECT_FALSE(watched_device(ProviderId::kCpu, {}, ProviderId::kCpu, {}));
}

}  // namespace
}  // namespace parley::runtime
