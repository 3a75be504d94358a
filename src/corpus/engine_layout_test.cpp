// The corpus engine's layout, as every face builds it (corpus/engine_layout.h).
#include "corpus/engine_layout.h"

#include <gtest/gtest.h>

#include <thread>

#include "core/error.h"

namespace parley::corpus {
namespace {

// Without placement the configuration's providers are used as given: no model is read.
pipeline::DiarizationConfig cpu_config(int threads) {
  pipeline::DiarizationConfig config;
  config.threads = threads;
  return config;
}

TEST(EngineLayout, OneEngineOnTheCpuByDefault) {
  const EngineLayout layout = plan_engine_layout({}, cpu_config(4), {});
  EXPECT_FALSE(layout.on_accelerator());
  EXPECT_EQ(layout.engines.size(), 1u);
  EXPECT_TRUE(layout.engines_per_device_automatic);
  const nlohmann::ordered_json described = layout.describe();
  EXPECT_EQ(described["providers"], "cpu");
  EXPECT_EQ(described["engines"], 1);
  EXPECT_EQ(described["engine"]["threads"], 4);
  EXPECT_EQ(described["decode_threads"], 2);
}

TEST(EngineLayout, EnginesOnTheCpuShareItsThreads) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "needs 2 hardware threads";
  EngineLayoutRequest request;
  request.engines_per_device = 2;
  request.jobs = 3;
  const EngineLayout layout = plan_engine_layout({}, cpu_config(4), request);
  ASSERT_EQ(layout.engines.size(), 2u);
  EXPECT_EQ(layout.engines[0].threads, 2);
  EXPECT_EQ(layout.corpus.clustering_threads, 3);
  EXPECT_FALSE(layout.describe()["engines_per_device_automatic"].get<bool>());
}

TEST(EngineLayout, SameRequestSameDescription) {
  EngineLayoutRequest request;
  request.jobs = 4;
  EXPECT_EQ(plan_engine_layout({}, cpu_config(2), request).describe().dump(),
            plan_engine_layout({}, cpu_config(2), request).describe().dump());
}

TEST(EngineLayout, RefusesDevicesOnTheCpuAndTooManyEngines) {
  EngineLayoutRequest devices;
  devices.device_list = "0";
  EXPECT_THROW(plan_engine_layout({}, cpu_config(1), devices), Error);
  EngineLayoutRequest too_many;
  too_many.engines_per_device = kMaxEnginesPerDevice + 1;
  EXPECT_THROW(plan_engine_layout({}, cpu_config(1), too_many), Error);
}

TEST(EngineLayout, RequestFromOptionValues) {
  const EngineLayoutRequest defaults = layout_request(nlohmann::json::object());
  EXPECT_EQ(defaults.device_list, "");
  EXPECT_EQ(defaults.engines_per_device, 0);
  EXPECT_EQ(defaults.jobs, pipeline::kDefaultCorpusJobs);
  EXPECT_TRUE(defaults.segmentation_layout_automatic);
  const EngineLayoutRequest given = layout_request(
      {{"devices", "0,1"}, {"engines", 2}, {"jobs", 3}, {"segmentation_sessions", 2}});
  EXPECT_EQ(given.device_list, "0,1");
  EXPECT_EQ(given.engines_per_device, 2);
  EXPECT_EQ(given.jobs, 3);
  EXPECT_FALSE(given.segmentation_layout_automatic);
  EXPECT_FALSE(layout_request({{"segmentation_batch", 8}}).segmentation_layout_automatic);
  try {
    layout_request({{"jobs", 0}});
    ADD_FAILURE() << "jobs 0 accepted";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(), "jobs: must be 1 to 256 (got 0)");
  }
}

TEST(ParseDevices, ListsOfNumbers) {
  EXPECT_TRUE(parse_devices("", runtime::ProviderId::kCuda).empty());
  EXPECT_EQ(parse_devices("0,2", runtime::ProviderId::kCuda), (std::vector<int>{0, 2}));
  EXPECT_THROW(parse_devices("0,x", runtime::ProviderId::kCuda), Error);
  EXPECT_THROW(parse_devices("-1", runtime::ProviderId::kCuda), Error);
  EXPECT_THROW(parse_devices("0", runtime::ProviderId::kCpu), Error);
}

}  // namespace
}  // namespace parley::corpus
