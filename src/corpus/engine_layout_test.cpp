// The corpus engine's layout, as every face builds it (corpus/engine_layout.h).
#include "corpus/engine_layout.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <utility>
#include <vector>

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

// Both models on CUDA, as given (no placement: plan_model_sessions reads no model and asks no
// provider), so that layouts over several GPUs are planned on a machine without one.
pipeline::DiarizationConfig fake_gpu_config() {
  pipeline::DiarizationConfig config;
  config.threads = 2;
  config.segmentation_provider = runtime::ProviderId::kCuda;
  config.embedding_provider = runtime::ProviderId::kCuda;
  return config;
}

TEST(EngineLayout, SeveralEnginesOnSeveralGpus) {
  EngineLayoutRequest request;
  request.device_list = "0,2,3";
  request.engines_per_device = 2;
  request.jobs = 5;
  const EngineLayout layout = plan_engine_layout({}, fake_gpu_config(), request);
  EXPECT_TRUE(layout.on_accelerator());
  EXPECT_EQ(layout.devices, (std::vector<int>{0, 2, 3}));
  ASSERT_EQ(layout.engines.size(), 6u);
  const std::vector<std::string> expected_devices = {"0", "0", "2", "2", "3", "3"};
  for (std::size_t i = 0; i < layout.engines.size(); ++i) {
    const pipeline::DiarizationConfig& engine = layout.engines[i];
    EXPECT_EQ(engine.segmentation_provider_options.at("device_id"), expected_devices[i]) << i;
    EXPECT_EQ(engine.embedding_provider_options.at("device_id"), expected_devices[i]) << i;
    // Several engines on a GPU share it: the several-engines segmentation layout, and the
    // threads are not divided (that is for engines on the CPU).
    EXPECT_EQ(engine.segmentation_accelerator_sessions, kSeveralEnginesSegmentationSessions);
    ASSERT_TRUE(engine.placement);
    EXPECT_EQ(engine.placement->accelerator_segmentation_batch_size,
              kSeveralEnginesSegmentationBatch);
    EXPECT_EQ(engine.threads, 2);
  }
  const nlohmann::ordered_json described = layout.describe();
  EXPECT_EQ(described["devices"], nlohmann::json({0, 2, 3}));
  EXPECT_EQ(described["engines"], 6);
  EXPECT_EQ(described["engines_per_device"], 2);
  EXPECT_EQ(described["decode_threads"], 5);
  EXPECT_EQ(described["engine"]["segmentation_accelerator_sessions"],
            kSeveralEnginesSegmentationSessions);
}

TEST(EngineLayout, OneEnginePerGpuKeepsTheSegmentationLayoutAsked) {
  EngineLayoutRequest request;
  request.device_list = "1,0";
  request.engines_per_device = 1;
  const EngineLayout layout = plan_engine_layout({}, fake_gpu_config(), request);
  ASSERT_EQ(layout.engines.size(), 2u);
  EXPECT_EQ(layout.engines[0].embedding_provider_options.at("device_id"), "1");
  EXPECT_EQ(layout.engines[1].embedding_provider_options.at("device_id"), "0");
  EXPECT_EQ(layout.engines[0].segmentation_accelerator_sessions,
            fake_gpu_config().segmentation_accelerator_sessions);
}

// The faces hand the layout option values (the CLI's flags, the C API's named options, Python's
// keywords, all through layout_request); a request written field by field must give the same
// layout, and a request that differs in any field another one.
TEST(EngineLayout, OptionValuesGiveTheLayoutOfTheRequestTheyName) {
  EngineLayoutRequest fields;
  fields.device_list = "0,1";
  fields.engines_per_device = 3;
  fields.jobs = 4;
  const nlohmann::json values = {{"devices", "0,1"}, {"engines", 3}, {"jobs", 4}};
  const std::string from_values =
      plan_engine_layout({}, fake_gpu_config(), layout_request(values)).describe().dump();
  EXPECT_EQ(from_values, plan_engine_layout({}, fake_gpu_config(), fields).describe().dump());
  for (const auto& [name, other] : {std::pair<const char*, nlohmann::json>{"devices", "0,2,3"},
                                    {"engines", 2},
                                    {"jobs", 3},
                                    {"segmentation_batch", 64}}) {
    nlohmann::json changed = values;
    changed[name] = other;
    EXPECT_NE(from_values,
              plan_engine_layout({}, fake_gpu_config(), layout_request(changed)).describe().dump())
        << name;
  }
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
