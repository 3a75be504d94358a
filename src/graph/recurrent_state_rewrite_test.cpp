#include "graph/recurrent_state_rewrite.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>

#include "core/error.h"
#include "graph/onnx_graph.h"
#include "runtime/onnx_session.h"
#include "testing/shared_data.h"

namespace parley::graph {
namespace {

TEST(RecurrentStateRewrite, SegmentationModelLosesItsZeroStatesAndStaysBitIdentical) {
  PARLEY_REQUIRE_SHARED(path, "models/segmentation-3.0-fp16.onnx");
  const std::string original = read_model_bytes(path);
  const RecurrentStateRewrite rewrite = drop_zero_recurrent_states(original, path.string());
  // Four bidirectional LSTM layers, each with initial_h and initial_c.
  EXPECT_EQ(rewrite.states_removed, 8);
  EXPECT_GT(rewrite.nodes_removed, 0);

  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(rewrite.model));
  for (const auto& node : model.graph().node()) {
    EXPECT_NE(node.op_type(), "ConstantOfShape") << node.name();
    if (node.op_type() == "LSTM") {
      EXPECT_LE(node.input_size(), 5) << node.name();
    }
  }

  runtime::SessionConfig config;
  runtime::OnnxSession before(runtime::ModelBuffer{original, "original"}, config);
  runtime::OnnxSession after(runtime::ModelBuffer{rewrite.model, "rewritten"}, config);
  NdArray<float> waveform({1, 1, 160000});
  for (std::size_t i = 0; i < waveform.size(); ++i) {
    waveform(i) = 0.1f * std::sin(0.01f * static_cast<float>(i)) +
                  0.05f * std::sin(0.37f * static_cast<float>(i));
  }
  const auto expected =
      before.run({{before.inputs()[0].name, &waveform}}, {before.outputs()[0].name});
  const auto actual = after.run({{after.inputs()[0].name, &waveform}}, {after.outputs()[0].name});
  ASSERT_EQ(expected[0].shape(), actual[0].shape());
  EXPECT_EQ(expected[0].values(), actual[0].values());  // exact: ONNX's default state is zero
}

TEST(RecurrentStateRewrite, ModelsWithoutRecurrentStatesAreReturnedUnchanged) {
  PARLEY_REQUIRE_SHARED(path, "models/silero_vad.onnx");
  const std::string original = read_model_bytes(path);
  const RecurrentStateRewrite rewrite = drop_zero_recurrent_states(original, path.string());
  EXPECT_EQ(rewrite.states_removed, 0);
  EXPECT_EQ(rewrite.model, original);
}

TEST(RecurrentStateRewrite, GarbageIsAnErrorNamingTheModel) {
  try {
    drop_zero_recurrent_states("definitely not protobuf \xff\xff\xff", "junk.onnx");
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("junk.onnx"), std::string::npos);
  }
}

}  // namespace
}  // namespace parley::graph
