// Its own test program: shutting ONNX Runtime down ends its use for the whole process.
#include "runtime/shutdown.h"

#include <gtest/gtest.h>

#include <memory>

#include "core/error.h"
#include "runtime/onnx_session.h"

namespace parley::runtime {
namespace {

const std::filesystem::path kModel =
    std::filesystem::path(PARLEY_RUNTIME_TESTDATA) / "affine_batch.onnx";

TEST(Shutdown, WaitsForLiveSessionsThenReleasesTheEnvironmentOnce) {
  auto session = std::make_unique<OnnxSession>(kModel, SessionConfig{});
  EXPECT_EQ(live_session_count(), 1);
  // A session is alive: nothing may be released under it.
  const ShutdownReport early = shutdown_onnx_runtime();
  EXPECT_FALSE(early.released);
  EXPECT_NE(early.skipped_because.find("1 ONNX Runtime session"), std::string::npos);
  NdArray<float> input({2, 3}, 1.f);
  EXPECT_NO_THROW(
      session->run({{session->inputs()[0].name, &input}}, {session->outputs()[0].name}));

  session.reset();
  EXPECT_EQ(live_session_count(), 0);
  const ShutdownReport report = shutdown_onnx_runtime();
  EXPECT_TRUE(report.released);
  EXPECT_EQ(report.providers_unregistered, 0);  // no provider library on a CPU-only machine
  try {
    OnnxSession after(kModel, SessionConfig{});
    FAIL() << "a session after shutdown must be refused";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("shut down"), std::string::npos) << error.what();
  }
  EXPECT_EQ(live_session_count(), 0);
}

}  // namespace
}  // namespace parley::runtime
