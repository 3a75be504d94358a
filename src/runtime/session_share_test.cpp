#include "runtime/session_share.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/ndarray.h"

namespace parley::runtime {
namespace {

const std::filesystem::path kModel =
    std::filesystem::path(PARLEY_RUNTIME_TESTDATA) / "affine_batch.onnx";

std::string model_bytes() {
  std::ifstream stream(kModel, std::ios::binary);
  return {std::istreambuf_iterator<char>(stream), std::istreambuf_iterator<char>()};
}

TEST(SessionShare, OneSessionPerModelAndSettings) {
  SessionShare share(SessionShare::Scope::kEverySession);
  const std::string bytes = model_bytes();
  const auto first = share.open(ModelBuffer{bytes, "affine"}, SessionConfig{});
  // Another copy of the same bytes under another name is the same model.
  const std::string copy = bytes;
  EXPECT_EQ(share.open(ModelBuffer{copy, "affine again"}, SessionConfig{}), first);
  SessionConfig two_threads;
  two_threads.intra_op_threads = 2;
  const auto other_settings = share.open(ModelBuffer{bytes, "affine"}, two_threads);
  EXPECT_NE(other_settings, first);
  const auto from_file = share.open(kModel, SessionConfig{});
  EXPECT_EQ(from_file, first) << "the file holds the same bytes";
  EXPECT_EQ(share.size(), 2u);
}

TEST(SessionShare, CpuSessionsAreNotSharedByDefault) {
  SessionShare share;
  const std::string bytes = model_bytes();
  const auto first = share.open(ModelBuffer{bytes, "affine"}, SessionConfig{});
  const auto second = share.open(ModelBuffer{bytes, "affine"}, SessionConfig{});
  EXPECT_NE(first, second);
  EXPECT_EQ(share.size(), 0u);
}

TEST(SessionShare, SharesSessionsThatTakeConcurrentRunsOfAnyShape) {
  const auto on = [](ProviderId provider, ProviderOptions options = {}) {
    SessionConfig config;
    config.provider = provider;
    config.provider_options = std::move(options);
    return config;
  };
  const SessionShare share;
  EXPECT_TRUE(share.shares(on(ProviderId::kCuda)));
  EXPECT_TRUE(share.shares(on(ProviderId::kRocm)));
  EXPECT_FALSE(share.shares(on(ProviderId::kCpu))) << "CPU workers keep their own arenas";
  EXPECT_TRUE(SessionShare(SessionShare::Scope::kEverySession).shares(on(ProviderId::kCpu)));
  EXPECT_FALSE(share.shares(on(ProviderId::kDml))) << "one Run at a time";
  EXPECT_FALSE(share.shares(on(ProviderId::kTensorRt))) << "a session per shape";
  EXPECT_FALSE(share.shares(on(ProviderId::kMigraphx)));
  EXPECT_FALSE(share.shares(on(ProviderId::kCuda, {{"enable_cuda_graph", "1"}})))
      << "a captured graph replays one run at a time";
  EXPECT_TRUE(share.shares(on(ProviderId::kCuda, {{"enable_cuda_graph", "0"}})));
  SessionConfig captured = on(ProviderId::kCuda);
  captured.capture_graph = true;
  EXPECT_FALSE(share.shares(captured)) << "a session per user: one replay at a time";
}

TEST(SessionShare, AFailedOpenKeepsNothing) {
  SessionShare share(SessionShare::Scope::kEverySession);
  const std::string garbage = "not a model";
  EXPECT_THROW(share.open(ModelBuffer{garbage, "garbage"}, SessionConfig{}), Error);
  EXPECT_THROW(share.open(ModelBuffer{garbage, "garbage"}, SessionConfig{}), Error);
  EXPECT_EQ(share.size(), 0u);
  EXPECT_THROW(share.open(std::filesystem::path("/nonexistent/model.onnx"), SessionConfig{}),
               Error);
  EXPECT_EQ(share.size(), 0u);
}

TEST(SessionShare, ThreadsAskingAtOnceGetOneSessionAndRunIt) {
  SessionShare share(SessionShare::Scope::kEverySession);
  const std::string bytes = model_bytes();
  std::vector<std::shared_ptr<OnnxSession>> sessions(4);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < sessions.size(); ++t) {
    threads.emplace_back([&, t] { sessions[t] = share.open(ModelBuffer{bytes, "affine"}, {}); });
  }
  for (auto& thread : threads) thread.join();
  for (const auto& session : sessions) EXPECT_EQ(session, sessions.front());
  EXPECT_EQ(share.size(), 1u);

  // Runs of the one session from several threads at once each get their own result
  // (the model is y = 2x + 1).
  OnnxSession& session = *sessions.front();
  const std::string input = session.inputs().at(0).name;
  const std::string output = session.outputs().at(0).name;
  threads.clear();
  std::vector<int> wrong(8, 0);
  for (std::size_t t = 0; t < wrong.size(); ++t) {
    threads.emplace_back([&, t] {
      NdArray<float> x({2, 3});
      for (std::size_t i = 0; i < x.size(); ++i) x.data()[i] = static_cast<float>(i + 10 * t);
      for (int repeat = 0; repeat < 50; ++repeat) {
        const NdArray<float> y = session.run({{input, &x}}, {output}).at(0);
        for (std::size_t i = 0; i < x.size(); ++i) {
          if (y.data()[i] != 2.f * x.data()[i] + 1.f) ++wrong[t];
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (std::size_t t = 0; t < wrong.size(); ++t) EXPECT_EQ(wrong[t], 0) << "thread " << t;
}

// Users waiting for a session that fails to open get its error, and the next user tries again.
TEST(SessionShare, ThreadsWaitingForAFailedOpenGetItsError) {
  SessionShare share(SessionShare::Scope::kEverySession);
  const std::string garbage = "not a model";
  std::vector<int> failed(4, 0);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < failed.size(); ++t) {
    threads.emplace_back([&, t] {
      try {
        share.open(ModelBuffer{garbage, "garbage"}, SessionConfig{});
      } catch (const Error&) {
        failed[t] = 1;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (std::size_t t = 0; t < failed.size(); ++t) EXPECT_EQ(failed[t], 1) << "thread " << t;
  EXPECT_EQ(share.size(), 0u);
  EXPECT_NE(share.open(ModelBuffer{model_bytes(), "affine"}, SessionConfig{}), nullptr);
}

// Sessions of different settings (another device's) are opened side by side, each once.
TEST(SessionShare, ThreadsOpeningDifferentSettingsAtOnceGetOneSessionEach) {
  SessionShare share(SessionShare::Scope::kEverySession);
  const std::string bytes = model_bytes();
  std::vector<std::shared_ptr<OnnxSession>> sessions(6);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < sessions.size(); ++t) {
    threads.emplace_back([&, t] {
      SessionConfig config;
      config.intra_op_threads = 1 + static_cast<int>(t % 2);
      sessions[t] = share.open(ModelBuffer{bytes, "affine"}, config);
    });
  }
  for (auto& thread : threads) thread.join();
  for (std::size_t t = 2; t < sessions.size(); ++t) EXPECT_EQ(sessions[t], sessions[t % 2]);
  EXPECT_NE(sessions[0], sessions[1]);
  EXPECT_EQ(share.size(), 2u);
}

}  // namespace
}  // namespace parley::runtime
