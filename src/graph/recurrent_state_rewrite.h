#pragma once
// ONNX exports of PyTorch LSTMs (segmentation-3.0 among them) build each layer's all-zero
// initial_h / initial_c at run time: Shape -> Gather -> Concat -> ConstantOfShape(0) -> Slice.
// ONNX defines a missing initial state as zeros, so dropping those inputs is exact. It matters
// because ONNX Runtime 1.29's CUDA provider crashes setting up that Slice
// (docs/providers.md, "Segmentation on CUDA"); without the state chain the model runs there.
#include <string>

namespace parley::graph {

struct RecurrentStateRewrite {
  std::string model;       // serialized ONNX model (the input unchanged when nothing applied)
  int states_removed = 0;  // initial_h / initial_c inputs dropped
  int nodes_removed = 0;   // nodes left without a consumer and pruned
};

// Drops LSTM/GRU/RNN initial states that are provably all zero (ConstantOfShape with a zero or
// default value, possibly through Slice/Reshape/Unsqueeze/Squeeze/Identity/Expand) and prunes the
// nodes and initializers that only fed them. Fails, naming the model, when it cannot be parsed.
RecurrentStateRewrite drop_zero_recurrent_states(const std::string& model_bytes,
                                                 const std::string& model_name);

}  // namespace parley::graph
