#pragma once
// A float32 model rewritten to compute in float16 between its float32 inputs and outputs, for
// GPU providers with float16 tensor cores for convolutions, matrix products and cuDNN's LSTMs
// (whether that pays is measured, not assumed: docs/benchmarks.md): every float32 weight and
// constant becomes float16, each float32 input is cast to float16 where the graph starts and each
// float32 output back to float32 where it ends, so callers feed and read the same tensors as
// before. The rewrite is not exact; the pipeline gates its use with agreement measurements
// (docs/benchmarks.md, "Toward the hardware limit"). Graphs with an operator outside a list known
// to take float16 operands in every input (or with subgraphs) are refused, naming the operator.
#include <string>

#include "runtime/provider.h"

namespace parley::graph {

struct Float16Graph {
  std::string model;  // serialized ONNX model
  int tensors_converted = 0;
  int casts_added = 0;
};

Float16Graph convert_to_float16(const std::string& model_bytes, const std::string& model_name);

// Whether a model run on `provider` may be given such a graph: a GPU provider that takes any
// shape (cuda, rocm). The CPU has no float16 kernels for these operators, and static-shape
// providers compile float16 themselves (TensorRT's trt_fp16_enable).
bool float16_graph_suits(runtime::ProviderId provider);

}  // namespace parley::graph
