#pragma once
// Replaces `If` nodes whose condition is known before the model runs by the branch they always
// take. pyannote's segmentation export wraps its SincNet convolution in such an `If`: the
// condition is `Shape(waveform)[1] == 1`, and the channel dimension is declared as 1. Together
// with the zero LSTM states (recurrent_state_rewrite.h) it is what ONNX Runtime 1.29's CUDA
// provider trips over (docs/providers.md, "Segmentation on CUDA"); on the CPU the inlined graph
// computes exactly the same operations, so outputs are bit-identical.
//
// A condition is proven from constants only: initializers, Constant nodes, and integer arithmetic
// on them and on the static dimensions of shapes (Shape of a graph input or of a tensor whose
// shape equals one: Cast, normalisations, element-wise activations), through Gather, Slice,
// Concat, Squeeze/Unsqueeze, Reshape, Cast, Equal, Not, And, Or, Xor, comparisons, Add, Sub, Mul.
// A condition that depends on data or a symbolic dimension leaves the `If` untouched.
#include <string>

namespace parley::graph {

struct ConstantIfInlining {
  std::string model;      // serialized ONNX model (the input unchanged when nothing applied)
  int ifs_inlined = 0;    // If nodes replaced by their taken branch
  int ifs_kept = 0;       // If nodes whose condition could not be proven constant
  int nodes_removed = 0;  // nodes pruned afterwards (the condition's arithmetic, among others)
};

// Inlines every provably constant `If` of the main graph (repeatedly, so an `If` inside an
// inlined branch is handled too), renaming the branch's values where they would collide and its
// outputs to the `If`'s outputs, hoisting its initializers, then prunes dead nodes. Fails,
// naming the model, when it cannot be parsed.
ConstantIfInlining inline_constant_ifs(const std::string& model_bytes,
                                       const std::string& model_name);

}  // namespace parley::graph
