// Which graphs and shapes `parley warm-cache` compiles (pipeline/warm_cache.h). The choice needs
// no accelerator, so it is checked on the CPU; so is the CPU's refusal to compile anything.
#include "pipeline/warm_cache.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/sha256.h"
#include "graph/embedding_model_test_support.h"
#include "stages/embedding_graphs.h"
#include "testing/temporary_directory.h"

namespace parley::pipeline {
namespace {
namespace fs = std::filesystem;
using runtime::Buckets;
using runtime::InputShape;

const fs::path kAffine = fs::path(PARLEY_RUNTIME_TESTDATA) / "affine_batch.onnx";

TEST(WarmCacheConfig, ProfileTakesTheGivenSizesOverTheChunksOfParleysModels) {
  WarmCacheConfig config;
  runtime::ShapeProfile profile = warm_cache_profile(config);
  EXPECT_EQ(profile.batch, runtime::default_batch_buckets());
  EXPECT_EQ(profile.dim_buckets.at("samples"), Buckets({160000}));
  EXPECT_EQ(profile.dim_buckets.at("T"), Buckets({998}));
  EXPECT_EQ(profile.dim_buckets.at("frames"), Buckets({998}));

  config.batch_buckets = Buckets({1, 4});
  add_warm_cache_dimension(config, "frames=200,998");
  add_warm_cache_dimension(config, "fbank.1=80");
  add_warm_cache_dimension(config, "frames=300");  // the last one given counts
  profile = warm_cache_profile(config);
  EXPECT_EQ(profile.batch, Buckets({1, 4}));
  EXPECT_EQ(profile.dim_buckets.at("frames"), Buckets({300}));
  EXPECT_EQ(profile.dim_buckets.at("fbank.1"), Buckets({80}));
  EXPECT_EQ(profile.dim_buckets.at("samples"), Buckets({160000}));

  for (const char* wrong : {"frames", "=998", ""}) {
    try {
      add_warm_cache_dimension(config, wrong);
      ADD_FAILURE() << "'" << wrong << "' was taken for NAME=SIZES";
    } catch (const Error& error) {
      EXPECT_NE(std::string(error.what()).find("dimensions: expected NAME=SIZES"),
                std::string::npos)
          << error.what();
    }
  }
}

TEST(WarmCacheConfig, ValidateNamesTheField) {
  WarmCacheConfig config;
  EXPECT_NO_THROW(config.validate());
  config.steps = {1.0, 2.0};
  EXPECT_NO_THROW(config.validate());
  for (const std::vector<double>& steps : {std::vector<double>{}, std::vector<double>{1.0, 0.0}}) {
    config.steps = steps;
    try {
      config.validate();
      ADD_FAILURE() << steps.size() << " steps accepted";
    } catch (const Error& error) {
      EXPECT_EQ(std::string(error.what()).rfind("steps ", 0), 0u) << error.what();
    }
  }
}

class WarmCachePlanTest : public ::testing::Test {
 protected:
  testing::TemporaryDirectory folder_{"warm-cache"};
  fs::path cache_ = folder_ / "cache";
};

// A model that is no embedding model: the file as accelerators get it, at every batch bucket
// (its one dynamic dimension), under the digest the pipeline looks up; its costs measured.
TEST_F(WarmCachePlanTest, AModelIsCompiledAtEveryBatchBucket) {
  runtime::ShapeProfile profile;
  profile.batch = Buckets({1, 4});
  const WarmModelPlan plan = plan_warm_model(kAffine, profile, {1.0}, cache_);
  EXPECT_EQ(plan.source, kAffine);
  EXPECT_FALSE(plan.embedding);
  EXPECT_EQ(plan.skipped, "");
  ASSERT_EQ(plan.targets.size(), 1u);
  const WarmTarget& target = plan.targets.front();
  EXPECT_EQ(target.label, "");
  EXPECT_TRUE(target.measure_costs);
  EXPECT_EQ(target.sha256, sha256_file(target.model));
  EXPECT_EQ(target.shapes,
            (std::vector<std::vector<InputShape>>{{{"x", {1, 3}}}, {{"x", {4, 3}}}}));
}

// An embedding model: never the file, but the trunk at the batch buckets (costs measured) and the
// pooled trunk at the shared mode's pass of each step, all as the embedding stage plans them.
TEST_F(WarmCachePlanTest, AnEmbeddingModelIsCompiledAsTheEmbeddingStageLoadsIt) {
  const fs::path model = folder_ / "embedding.onnx";
  std::ofstream(model, std::ios::binary) << graph::testing::make_test_embedding_model();
  runtime::ShapeProfile profile;
  profile.batch = Buckets({1, 2, 8});
  const WarmModelPlan plan = plan_warm_model(model, profile, {1.0, 2.0}, cache_);
  EXPECT_TRUE(plan.embedding);
  EXPECT_EQ(plan.skipped, "");
  ASSERT_EQ(plan.targets.size(), 3u);

  stages::EmbeddingGraphSettings settings;
  settings.batch_buckets = profile.batch;
  const auto at_one = stages::embedding_compile_targets(model, cache_, settings);
  settings.step_seconds = 2.0;
  const auto at_two = stages::embedding_compile_targets(model, cache_, settings);
  ASSERT_TRUE(at_one && at_one->pooled && at_two && at_two->pooled);

  const WarmTarget& trunk = plan.targets[0];
  EXPECT_EQ(trunk.label, "trunk");
  EXPECT_TRUE(trunk.measure_costs);
  EXPECT_EQ(trunk.model, at_one->trunk.model);
  EXPECT_EQ(trunk.shapes, at_one->trunk_shapes);
  ASSERT_EQ(trunk.shapes.size(), 3u);
  EXPECT_EQ(trunk.shapes.back().front().dims.front(), 8);

  for (std::size_t k = 1; k < 3; ++k) {
    const auto& expected = k == 1 ? *at_one : *at_two;
    EXPECT_EQ(plan.targets[k].label, "pooled trunk");
    EXPECT_FALSE(plan.targets[k].measure_costs);
    EXPECT_EQ(plan.targets[k].model, expected.pooled->model);
    EXPECT_EQ(plan.targets[k].shapes, expected.pooled_shapes);
  }
  EXPECT_NE(plan.targets[1].shapes, plan.targets[2].shapes) << "a pass spans steps";
  for (const WarmTarget& target : plan.targets) EXPECT_NE(target.model, model);
}

TEST_F(WarmCachePlanTest, ModelsComeFromTheFirstFolderThatHasAny) {
  const fs::path models = folder_ / "models";
  fs::create_directories(models);
  for (const char* name : {"b.onnx", "a.onnx", "notes.txt"}) std::ofstream(models / name) << "x";
  const WarmCacheModels found = find_warm_cache_models(models);
  EXPECT_EQ(found.dir, models);
  EXPECT_EQ(found.origin, "models_dir");
  EXPECT_EQ(found.models, (std::vector<fs::path>{models / "a.onnx", models / "b.onnx"}));
}

// The CPU runs every shape directly: nothing is searched, compiled or written.
TEST_F(WarmCachePlanTest, TheCpuCompilesNothing) {
  class Counting : public WarmCacheObserver {
   public:
    void started(runtime::ProviderId, const std::string&, const fs::path&) override { ++calls; }
    void models_found(const WarmCacheModels&) override { ++calls; }
    int calls = 0;
  } observer;
  WarmCacheConfig config;
  config.placement.choice = runtime::ProviderChoice::parse("cpu");
  config.cache_dir = cache_;
  config.models_dir = folder_ / "no-models-here";
  const WarmCacheSummary summary = warm_cache(config, observer);
  EXPECT_TRUE(summary.nothing_to_compile);
  EXPECT_FALSE(summary.automatic);
  EXPECT_EQ(summary.provider, runtime::ProviderId::kCpu);
  EXPECT_EQ(summary.shapes, 0u);
  EXPECT_EQ(observer.calls, 0);
  EXPECT_FALSE(fs::exists(cache_));
  config.steps.clear();
  EXPECT_THROW(warm_cache(config, observer), Error) << "validated first";
}

}  // namespace
}  // namespace parley::pipeline
