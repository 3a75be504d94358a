#include "pipeline/network_placement.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/heap.h"
#include "core/sha256.h"
#include "graph/embedding_model_test_support.h"
#include "pipeline/diarizer.h"
#include "stages/embedding_graphs.h"

namespace parley::pipeline {
namespace {
namespace fs = std::filesystem;
using runtime::ProviderChoice;
using runtime::ProviderId;

// Synthetic machines: the decisions are pure functions of these facts, so no GPU is needed.
class NetworkPlacementTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ =
        fs::temp_directory_path() / ("parley_network_placement_test_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
    models_.segmentation = root_ / "segmentation.onnx";
    models_.embedding = root_ / "embedding.onnx";
    // Any valid ONNX model: an accelerator's digest is taken after the (here empty) rewrite.
    std::ofstream(models_.segmentation) << graph::testing::make_test_embedding_model();
    std::ofstream(models_.embedding) << graph::testing::make_test_embedding_model();

    runtime::DiscoveryFacts facts;
    facts.os = "linux";
    facts.ort_version = "1.29.0";
    facts.ort_providers = {"CPUExecutionProvider"};
    cpu_statuses_ = runtime::assess_providers(facts);
    runtime::DiscoveryFacts unused_gpu = facts;  // a GPU, and no provider library to drive it
    unused_gpu.gpus.push_back({"nvidia", "NVIDIA H100 80GB HBM3", "550.54"});
    unused_gpu_statuses_ = runtime::assess_providers(unused_gpu);
    runtime::LibraryFacts cuda;
    cuda.file = "/opt/ort/lib/libonnxruntime_providers_cuda.so";
    cuda.identity = "libonnxruntime_providers_cuda.so 1 bytes mtime 1";
    cuda.plugin_registered = true;
    cuda.plugin_devices = {"NVIDIA H100 80GB HBM3"};
    facts.libraries[ProviderId::kCuda] = cuda;
    runtime::LibraryFacts migraphx;
    migraphx.file = "/opt/rocm/lib/libonnxruntime_providers_migraphx.so";
    migraphx.identity = "libonnxruntime_providers_migraphx.so 1 bytes mtime 1";
    migraphx.plugin_registered = true;
    migraphx.plugin_devices = {"AMD Instinct MI300X"};
    facts.libraries[ProviderId::kMigraphx] = migraphx;
    gpu_statuses_ = runtime::assess_providers(facts);
  }
  void TearDown() override { fs::remove_all(root_); }

  DiarizationConfig routed(const std::string& provider,
                           runtime::ForceMode force = runtime::ForceMode::kNone) const {
    DiarizationConfig config;
    config.threads = 4;
    ProviderPlacement placement;
    placement.choice = ProviderChoice::parse(provider);
    placement.force = force;
    placement.compile_cache_root = root_ / "cache";
    placement.expected_audio_seconds = 3600.0;
    config.placement = placement;
    return config;
  }

  // Publishes a compiled MIGraphX entry for `shapes` of the model with digest `sha256`, as
  // warm-cache does.
  void publish(const std::string& sha256, const std::vector<runtime::InputShape>& shapes) const {
    const auto& status = runtime::find_status(gpu_statuses_, ProviderId::kMigraphx);
    runtime::CompileCache cache(root_ / "cache");
    auto build = cache.begin_build(
        runtime::make_compile_key(sha256, "model", shapes, status.id,
                                  runtime::effective_options(status.id, {}), status.environment));
    std::ofstream(build.artifacts_dir() / "program.mxr") << "compiled";
    build.commit(1.0);
  }

  std::vector<runtime::ProviderStatus> migraphx_only() const {
    std::vector<runtime::ProviderStatus> statuses = gpu_statuses_;
    for (auto& status : statuses) {
      if (status.id == ProviderId::kCuda) status.available = false;
    }
    return statuses;
  }

  ModelSessionPlan plan(const DiarizationConfig& config,
                        const std::vector<runtime::ProviderStatus>& statuses) {
    return plan_model_sessions(models_, config, {&statuses, &notices_});
  }

  fs::path root_;
  DiarizationModels models_;
  std::vector<runtime::ProviderStatus> cpu_statuses_;
  std::vector<runtime::ProviderStatus> gpu_statuses_;
  std::vector<runtime::ProviderStatus> unused_gpu_statuses_;
  std::vector<std::string> said_;
  runtime::OnceNotices notices_{[this](const std::string& message) { said_.push_back(message); }};
};

TEST_F(NetworkPlacementTest, WithoutRoutingTheExplicitProvidersAreUsedAsGiven) {
  DiarizationConfig config;
  config.threads = 3;
  config.segmentation_batch_size = 2;
  const auto sessions = plan(config, gpu_statuses_);
  EXPECT_FALSE(sessions.segmentation_placement);
  EXPECT_FALSE(sessions.embedding_placement);
  EXPECT_EQ(sessions.segmentation.provider, ProviderId::kCpu);
  EXPECT_EQ(sessions.segmentation.threads, 3);
  EXPECT_EQ(sessions.segmentation.batch_size, 2u);
  EXPECT_EQ(sessions.embedding.session.provider, ProviderId::kCpu);
  EXPECT_EQ(sessions.embedding.session.intra_op_threads, 3);
  // The CPU trunk runs with ONNX Runtime's layout optimizations; segmentation keeps its level.
  EXPECT_EQ(sessions.embedding.session.optimization, runtime::GraphOptimization::kAll);
  EXPECT_EQ(sessions.segmentation.optimization, runtime::GraphOptimization::kExtended);
  EXPECT_TRUE(said_.empty());
}

TEST_F(NetworkPlacementTest, AutoWithoutGpuRunsBothOnTheCpuAndSaysSoOnce) {
  const auto sessions = plan(routed("auto"), cpu_statuses_);
  ASSERT_TRUE(sessions.segmentation_placement);
  ASSERT_TRUE(sessions.embedding_placement);
  EXPECT_EQ(sessions.segmentation.provider, ProviderId::kCpu);
  EXPECT_EQ(sessions.embedding.session.provider, ProviderId::kCpu);
  EXPECT_EQ(sessions.segmentation.threads, 4);  // CPU workers, the CPU's batch
  EXPECT_EQ(sessions.segmentation.batch_size, automatic_segmentation_batch(4));
  EXPECT_FALSE(sessions.segmentation.batch_buckets);
  EXPECT_NE(sessions.segmentation_placement->reason.find("CPU"), std::string::npos);
  EXPECT_NE(sessions.embedding_placement->reason.find("CPU"), std::string::npos);
  // Without a GPU on the machine the CPU is no news: no notice (a debug line only).
  EXPECT_TRUE(said_.empty()) << said_.front();
  // A GPU that no provider drives is worth one notice for both models.
  plan(routed("auto"), unused_gpu_statuses_);
  ASSERT_EQ(said_.size(), 1u) << "one notice for both models";
  EXPECT_NE(said_.front().find("CPU"), std::string::npos) << said_.front();
}

TEST_F(NetworkPlacementTest, NamedUnavailableProviderIsAClearError) {
  try {
    plan(routed("cuda"), cpu_statuses_);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("cuda"), std::string::npos) << message;
    EXPECT_NE(message.find("libonnxruntime_providers_cuda.so"), std::string::npos) << message;
  }
  EXPECT_THROW(plan(routed("auto", runtime::ForceMode::kGpu), cpu_statuses_), Error);
}

TEST_F(NetworkPlacementTest, NamedCudaReachesBothSessionConfigsWithBatchedSegmentation) {
  DiarizationConfig config = routed("cuda");
  config.placement->options = {{"device_id", "0"}};
  const auto sessions = plan(config, gpu_statuses_);
  EXPECT_EQ(sessions.segmentation.provider, ProviderId::kCuda);
  EXPECT_EQ(sessions.segmentation.provider_options.at("device_id"), "0");
  EXPECT_EQ(sessions.segmentation.provider_options.at("use_tf32"), "0");
  EXPECT_FALSE(sessions.embedding.session.provider_options.contains("use_tf32"));
  EXPECT_EQ(sessions.segmentation.threads, 1);
  EXPECT_EQ(sessions.segmentation.batch_size, 128u);  // the GPU default, an hour of chunks
  EXPECT_FALSE(sessions.segmentation.batch_buckets);  // CUDA takes any batch: no padding
  EXPECT_EQ(sessions.embedding.session.provider, ProviderId::kCuda);
  EXPECT_EQ(sessions.embedding.session.provider_options.at("device_id"), "0");
  EXPECT_EQ(sessions.embedding.batch_size, 32u);
  EXPECT_EQ(sessions.embedding.session.optimization, runtime::GraphOptimization::kExtended);
  EXPECT_NE(sessions.segmentation_placement->reason.find("cuda (provider cuda requested)"),
            std::string::npos)
      << sessions.segmentation_placement->reason;
  EXPECT_TRUE(said_.empty());
}

// Segmentation runs in full float32 on CUDA (its frames move with TF32), unless the user asks.
TEST_F(NetworkPlacementTest, SegmentationLeavesTf32OffUnlessTheUsersOptionsTurnItOn) {
  DiarizationConfig config = routed("cuda");
  config.placement->options = {{"use_tf32", "1"}};
  const auto sessions = plan(config, gpu_statuses_);
  EXPECT_EQ(sessions.segmentation.provider_options.at("use_tf32"), "1");
  EXPECT_EQ(sessions.embedding.session.provider_options.at("use_tf32"), "1");
  const auto on_cpu = plan(routed("auto"), cpu_statuses_);
  EXPECT_TRUE(on_cpu.segmentation.provider_options.empty());
}

// Float16 reaches only models on a dynamic-shape accelerator; on the CPU the flag changes nothing.
TEST_F(NetworkPlacementTest, Float16OnlyWhereAModelRunsOnTheGpu) {
  DiarizationConfig config = routed("cuda");
  config.accelerator_float16 = true;
  auto sessions = plan(config, gpu_statuses_);
  EXPECT_TRUE(sessions.segmentation.float16);
  EXPECT_TRUE(sessions.embedding.trunk_float16);
  config.placement->embedding_choice = ProviderChoice::parse("cpu");
  sessions = plan(config, gpu_statuses_);
  EXPECT_TRUE(sessions.segmentation.float16);
  EXPECT_FALSE(sessions.embedding.trunk_float16);
  DiarizationConfig on_cpu = routed("auto");
  on_cpu.accelerator_float16 = true;
  sessions = plan(on_cpu, cpu_statuses_);
  EXPECT_FALSE(sessions.segmentation.float16);
  EXPECT_FALSE(sessions.embedding.trunk_float16);
}

// A captured graph reaches the embedding network on CUDA; where that network runs on the CPU the
// request is refused in the option's words, never dropped without a word.
TEST_F(NetworkPlacementTest, CudaGraphReachesTheEmbeddingOnCudaAndIsRefusedOnTheCpu) {
  DiarizationConfig config = routed("cuda");
  auto sessions = plan(config, gpu_statuses_);
  EXPECT_FALSE(sessions.embedding.capture_pooled_graph) << "off unless asked for";
  config.embedding_graph_capture = true;
  sessions = plan(config, gpu_statuses_);
  EXPECT_TRUE(sessions.embedding.capture_pooled_graph);
  EXPECT_NO_THROW(sessions.embedding.validate());
  EXPECT_FALSE(sessions.embedding.session.capture_graph) << "only the graph-pooled passes";

  const auto refused = [&](const DiarizationConfig& asked,
                           const std::vector<runtime::ProviderStatus>& statuses,
                           const std::string& network) {
    try {
      plan(asked, statuses);
      ADD_FAILURE() << "expected an error about the " << network << " network";
    } catch (const Error& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find("cuda_graph: the " + network + " network runs on the cpu provider"),
                std::string::npos)
          << message;
    }
  };
  config.placement->embedding_choice = ProviderChoice::parse("cpu");
  refused(config, gpu_statuses_, "speaker-embedding");
  config.placement->embedding_choice.reset();
  config.placement->segmentation_choice = ProviderChoice::parse("cpu");
  EXPECT_TRUE(plan(config, gpu_statuses_).embedding.capture_pooled_graph)
      << "segmentation on the CPU does not matter";
  DiarizationConfig on_cpu = routed("auto");
  on_cpu.embedding_graph_capture = true;
  refused(on_cpu, cpu_statuses_, "speaker-embedding");
  stages::EmbeddingConfig embedding;
  embedding.capture_pooled_graph = true;
  EXPECT_THROW(embedding.validate(), Error) << "the embedding model on the cpu provider";
}

// Several segmentation sessions feed a GPU at once, as many as the free memory holds: each of
// 128 chunks needs about 670 MB by the estimate (runtime/device_memory.h).
TEST_F(NetworkPlacementTest, SegmentationSessionsShrinkToTheFreeMemory) {
  DiarizationConfig config = routed("cuda");
  auto sessions_with = [&](std::optional<runtime::DeviceMemory> memory) {
    said_.clear();
    PlacementEnvironment environment{&gpu_statuses_, &notices_, &memory};
    return plan_model_sessions(models_, config, environment).segmentation.accelerator_sessions;
  };
  constexpr std::uintmax_t kGiB = 1024ull * 1024 * 1024;
  EXPECT_EQ(sessions_with(std::nullopt), 4) << "unknown memory: as asked";
  EXPECT_TRUE(said_.empty());
  EXPECT_EQ(sessions_with(runtime::DeviceMemory{80 * kGiB, 70 * kGiB, "test"}), 4);
  EXPECT_TRUE(said_.empty());
  EXPECT_EQ(sessions_with(runtime::DeviceMemory{8 * kGiB, 3 * kGiB / 2, "test"}), 2);
  ASSERT_EQ(said_.size(), 1u);
  EXPECT_NE(said_.front().find("using 2"), std::string::npos) << said_.front();
  EXPECT_NE(said_.front().find("segmentation_accelerator_sessions"), std::string::npos)
      << said_.front();
  config.segmentation_accelerator_sessions = 1;
  EXPECT_EQ(sessions_with(runtime::DeviceMemory{8 * kGiB, kGiB / 2, "test"}), 1);
}

TEST_F(NetworkPlacementTest, PerModelChoiceOverridesTheCommonOne) {
  DiarizationConfig config = routed("cuda");
  config.placement->segmentation_choice = ProviderChoice::parse("cpu");
  const auto sessions = plan(config, gpu_statuses_);
  EXPECT_EQ(sessions.segmentation.provider, ProviderId::kCpu);
  EXPECT_EQ(sessions.segmentation.threads, 4);
  EXPECT_NE(sessions.segmentation_placement->reason.find("provider cpu requested"),
            std::string::npos);
  EXPECT_EQ(sessions.embedding.session.provider, ProviderId::kCuda);
}

TEST_F(NetworkPlacementTest, ShortJobsUseSmallerSegmentationBatches) {
  DiarizationConfig config = routed("cuda");
  config.placement->expected_audio_seconds = 15.0;  // 6 chunks
  const auto sessions = plan(config, gpu_statuses_);
  EXPECT_EQ(sessions.segmentation.batch_size, 6u);
}

TEST_F(NetworkPlacementTest, StaticShapeProviderPadsToBucketsThroughTheCache) {
  const auto sessions = plan(routed("migraphx"), gpu_statuses_);
  EXPECT_EQ(sessions.segmentation.provider, ProviderId::kMigraphx);
  ASSERT_TRUE(sessions.segmentation.batch_buckets);
  EXPECT_EQ(sessions.segmentation.batch_buckets->to_string(), "1,2,4,8,16,32,64,128");
  EXPECT_EQ(sessions.segmentation.compile_cache_root, root_ / "cache");
  EXPECT_EQ(sessions.segmentation.accelerator_sessions, 1) << "one session compiles each bucket";
  EXPECT_EQ(sessions.embedding.session.provider, ProviderId::kMigraphx);
  EXPECT_EQ(sessions.embedding.compile_cache_root, root_ / "cache");
  ASSERT_TRUE(sessions.embedding.batch_buckets);
  EXPECT_EQ(sessions.embedding.batch_buckets->to_string(), "1,2,4,8,16,32");
  EXPECT_EQ(sessions.embedding.batch_size, 32u);
  // Nothing compiled yet: a named provider compiles first and says how to do it ahead of time.
  EXPECT_NE(sessions.segmentation_placement->reason.find("warm-cache"), std::string::npos)
      << sessions.segmentation_placement->reason;
}

TEST_F(NetworkPlacementTest, AutoLeavesUncompiledStaticShapesOnTheCpu) {
  const auto sessions = plan(routed("auto"), migraphx_only());
  EXPECT_EQ(sessions.segmentation.provider, ProviderId::kCpu);
  EXPECT_EQ(sessions.embedding.session.provider, ProviderId::kCpu);
  EXPECT_NE(sessions.segmentation_placement->reason.find("not compiled"), std::string::npos)
      << sessions.segmentation_placement->reason;
}

// Under auto a static-shape provider takes the embedding only when the graphs the pipeline
// will load are compiled: the pooled pass in shared mode, the trunk buckets in exact mode; the
// whole embedding file (what warm-cache compiled before) is never loaded and does not count.
TEST_F(NetworkPlacementTest, AutoChecksTheEmbeddingGraphsThePipelineLoads) {
  const auto statuses = migraphx_only();
  const auto targets = stages::embedding_compile_targets(models_.embedding, root_ / "cache");
  ASSERT_TRUE(targets && targets->pooled);
  DiarizationConfig shared = routed("auto");
  DiarizationConfig exact = routed("auto");
  exact.embedding_mode = stages::EmbeddingMode::kExact;

  const auto buckets = runtime::Buckets::powers_of_two(32);
  for (std::size_t batch : buckets.sizes()) {
    publish(sha256_file(models_.embedding),
            {{"feats", {static_cast<std::int64_t>(batch), 998, 80}}});
  }
  EXPECT_EQ(plan(shared, statuses).embedding.session.provider, ProviderId::kCpu);
  EXPECT_EQ(plan(exact, statuses).embedding.session.provider, ProviderId::kCpu);

  for (const auto& shapes : targets->trunk_shapes) publish(targets->trunk.sha256, shapes);
  const auto exact_plan = plan(exact, statuses);
  EXPECT_EQ(exact_plan.embedding.session.provider, ProviderId::kMigraphx)
      << exact_plan.embedding_placement->reason;
  EXPECT_EQ(exact_plan.embedding.compile_cache_root, root_ / "cache");
  const auto shared_before = plan(shared, statuses);
  EXPECT_EQ(shared_before.embedding.session.provider, ProviderId::kCpu);
  EXPECT_NE(shared_before.embedding_placement->reason.find("256,64 are not compiled"),
            std::string::npos)
      << shared_before.embedding_placement->reason;

  // The whole pass alone is not enough: a recording's rest runs in a shorter pass.
  publish(targets->pooled->sha256, targets->pooled_shapes.back());
  const auto shared_whole_only = plan(shared, statuses);
  EXPECT_EQ(shared_whole_only.embedding.session.provider, ProviderId::kCpu);
  EXPECT_NE(shared_whole_only.embedding_placement->reason.find("are not compiled"),
            std::string::npos)
      << shared_whole_only.embedding_placement->reason;
  for (const auto& shapes : targets->pooled_shapes) publish(targets->pooled->sha256, shapes);
  const auto shared_after = plan(shared, statuses);
  EXPECT_EQ(shared_after.embedding.session.provider, ProviderId::kMigraphx)
      << shared_after.embedding_placement->reason;
  EXPECT_EQ(shared_after.embedding.batch_size, 32u);
}

}  // namespace
}  // namespace parley::pipeline

namespace parley::pipeline {
namespace {

TEST(AutomaticSegmentationBatch, AboutEightChunksInFlight) {
  EXPECT_EQ(automatic_segmentation_batch(1), 4u);
  EXPECT_EQ(automatic_segmentation_batch(2), 4u);
  EXPECT_EQ(automatic_segmentation_batch(4), 2u);
  EXPECT_EQ(automatic_segmentation_batch(8), 2u);
  EXPECT_EQ(automatic_segmentation_batch(64), 2u);
}

TEST(AutomaticSegmentationWorkers, EveryThreadUpToFourThenAQuarter) {
  EXPECT_EQ(automatic_segmentation_workers(1), 1);
  EXPECT_EQ(automatic_segmentation_workers(2), 2);
  EXPECT_EQ(automatic_segmentation_workers(4), 4);
  EXPECT_EQ(automatic_segmentation_workers(8), 4);
  EXPECT_EQ(automatic_segmentation_workers(16), 4);
  EXPECT_EQ(automatic_segmentation_workers(32), 8);
  EXPECT_EQ(automatic_segmentation_workers(64), 16);
}

// On the CPU every call holds its whole batch: --segmentation-batch 1000 took 13.8 GB on a 30 s
// clip. Batches the machine's memory cannot hold are refused before any model loads.
TEST_F(NetworkPlacementTest, CpuBatchesThatTheMachineCannotHoldAreRefused) {
  const std::uintmax_t memory = memory_budget_bytes();
  if (memory == 0) GTEST_SKIP() << "the system does not say how much memory it has";
  const auto message_of = [this](const DiarizationConfig& config) -> std::string {
    try {
      plan(config, cpu_statuses_);
    } catch (const Error& error) {
      return error.what();
    }
    return "(no error)";
  };
  for (const bool is_routed : {false, true}) {
    DiarizationConfig config = is_routed ? routed("cpu") : DiarizationConfig{};
    config.threads = 4;  // 4 segmentation workers
    config.segmentation_batch_size = kMaxSegmentationBatch;
    const std::uintmax_t need = 4 * kMaxSegmentationBatch * kCpuSegmentationBytesPerChunk;
    const std::string message = message_of(config);
    if (need > memory) {
      EXPECT_EQ(message.rfind("segmentation_batch_size 1024: 4 segmentation worker(s)", 0), 0u)
          << message;
      EXPECT_NE(message.find("more than this machine's"), std::string::npos) << message;
    } else {
      EXPECT_EQ(message, "(no error)");
    }
    config.segmentation_batch_size = 4;
    EXPECT_EQ(message_of(config), "(no error)");
    config.embedding_mode = stages::EmbeddingMode::kExact;
    config.embedding_batch_size = kMaxEmbeddingBatch;
    const std::string exact = message_of(config);
    if (kMaxEmbeddingBatch * kCpuExactEmbeddingBytesPerChunk > memory) {
      EXPECT_EQ(exact.rfind("embedding_batch_size 1024: exact-mode embedding calls", 0), 0u)
          << exact;
    } else {
      EXPECT_EQ(exact, "(no error)");
    }
  }
}

// The step sets how many chunks a recording keeps until clustering ends (about 16 KiB each).
TEST_F(NetworkPlacementTest, AStepWhoseChunksTheMachineCannotHoldIsRefused) {
  const std::uintmax_t memory = memory_budget_bytes();
  if (memory == 0) GTEST_SKIP() << "the system does not say how much memory it has";
  DiarizationConfig config = routed("cpu");
  config.step_seconds = 0.01;
  config.placement->expected_audio_seconds = 3600.0;  // 360,000 chunks: about 5.5 GiB
  const std::uintmax_t need = 360000u * (16u << 10);
  if (need > memory) {
    EXPECT_THROW(plan(config, cpu_statuses_), Error);
  } else {
    EXPECT_NO_THROW(plan(config, cpu_statuses_));
  }
  // A year of audio at 10 ms holds more than any machine.
  config.placement->expected_audio_seconds = 365.0 * 24 * 3600;
  try {
    plan(config, cpu_statuses_);
    FAIL() << "a year at a 10 ms step was accepted";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_EQ(message.rfind("step_seconds 0.01: a recording of 8760.0 h makes", 0), 0u) << message;
    EXPECT_NE(message.find("use a step of at least"), std::string::npos) << message;
  }
  config.step_seconds = 1.0;
  config.placement->expected_audio_seconds = 10 * 3600.0;  // ten hours at 1 s: about 560 MiB
  EXPECT_NO_THROW(plan(config, cpu_statuses_));
}

TEST_F(NetworkPlacementTest, ManyCpuThreadsGetFewerSegmentationWorkersAndEveryEmbeddingThread) {
  DiarizationConfig config;
  config.threads = 16;
  const auto sessions = plan(config, cpu_statuses_);
  EXPECT_EQ(sessions.segmentation.threads, 4);
  EXPECT_EQ(sessions.embedding.session.intra_op_threads, 16);
  EXPECT_EQ(sessions.embedding.feature_threads, 16);
}

}  // namespace
}  // namespace parley::pipeline
