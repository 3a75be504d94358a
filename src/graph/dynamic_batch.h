#pragma once
// Makes a model's batch dimension symbolic when it is pinned to 1 only in declared shapes (C++
// twin of tools/make_dynamic_batch.py). pyannote's segmentation export declares waveform
// [1,1,samples] -> segmentation [1,frames,7], but no operator reads a constant batch once its
// SincNet `If` is inlined (constant_if_inlining.h): the LSTM states come from Shape(x), the
// Reshapes copy the batch with 0. So only the declarations change: the leading dimension of
// every input and output becomes `batch`, the stale value_info and subgraph output shapes are
// dropped (ONNX Runtime infers them again). A model where a Reshape or Expand with a constant
// target acts on a tensor that flows from an input, with a literal leading size, is refused:
// that would bake the batch in.
#include <string>

namespace parley::graph {

struct DynamicBatch {
  std::string model;     // serialized ONNX model (the input unchanged when nothing applied)
  bool changed = false;  // a leading dimension was made symbolic
  bool dynamic = false;  // the batch is dynamic now (changed, or already was)
  std::string refusal;   // why the batch stays as declared (empty when dynamic)
};

// Fails, naming the model, when it cannot be parsed; a graph that cannot be made dynamic is
// reported in `refusal`, not thrown.
DynamicBatch make_batch_dynamic(const std::string& model_bytes, const std::string& model_name);

}  // namespace parley::graph
