#pragma once
// Tests only: a small speaker-embedding ONNX model with the exact pooling pattern of WeSpeaker's
// export (and tools/make_speed_twin.py), cheap enough to run in unit tests:
//   feats [B,T,80] -> Transpose -> Unsqueeze -> 3 x (Conv 3x3 stride 2 + Relu) -> [B,8,10,T']
//   -> TSTP (ReduceMean; sqrt(unbiased var + eps) via Sub/Mul/ReduceMean/Shape/Gather/Cast/Div)
//   -> Flatten, Concat(mean, std) [B,160] -> Gemm (transB=1) [B,16] -> Sub mean_vec -> embs
// T' follows ResNet34's time downsampling (three stride-2 convolutions): 998 frames -> 125.
#include <cstdint>
#include <string>

namespace parley::graph::testing {

struct TestEmbeddingModelOptions {
  float variance_epsilon = 1e-7f;  // WeSpeaker's TSTP adds 1e-7 under the square root
  bool reshape_to_3d = false;      // pool a [B, C*F, T'] reshape instead of [B, C, F, T']
  bool matmul_head = false;        // MatMul + Add instead of Gemm
  bool std_first = false;          // Concat(std, mean): a layout parley must refuse
  bool nan_head = false;           // a damaged model: NaN biases, so every embedding is NaN
  std::uint32_t seed = 7;
};

constexpr std::size_t kTestEmbeddingDim = 16;
constexpr std::size_t kTestPooledFeatures = 80;  // 8 channels x 10 frequency rows

// The serialized model.
std::string make_test_embedding_model(const TestEmbeddingModelOptions& options = {});

}  // namespace parley::graph::testing
