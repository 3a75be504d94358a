#pragma once
// Reading and editing ONNX graphs (Debian's libonnx protobuf classes). Its one job so far: cut a
// WeSpeaker-style speaker-embedding network before its statistics pooling, so that parley can
// pool each speaker's frames with pyannote's mask weights (see docs/embedding.md).
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/ndarray.h"

namespace parley::graph {

// embedding = weight * statistics + bias.
struct LinearLayer {
  NdArray<float> weight;    // [output_dim, input_dim]
  std::vector<float> bias;  // [output_dim]

  std::size_t input_dim() const { return weight.dim(1); }
  std::size_t output_dim() const { return weight.dim(0); }
};

// A speaker-embedding model cut in two at its statistics pooling:
//   trunk:  features [B, T, bins] -> frames [B, C, F, T'] (or [B, C*F, T'])
//   pooling: per row of the flattened C*F features, mean and standard deviation over T'
//   head:   concat(mean, std) [B, 2*C*F] -> linear -> embedding [B, D]
struct StatisticsPoolingSplit {
  std::string trunk_model;       // serialized ONNX model whose only output is `pooling_input`
  std::string features_input;    // the model's input tensor name (WeSpeaker: "feats")
  std::string embedding_output;  // the original model's output name (WeSpeaker: "embs")
  std::string pooling_input;     // the tensor whose time statistics feed the head
  std::int64_t time_axis = -1;   // axis the pooling reduces, as written in the graph
  LinearLayer head;  // with any constant added or subtracted after the linear layer folded in

  std::string to_string() const;
};

// The bytes of an .onnx file; fails with a clear message when missing or unreadable.
std::string read_model_bytes(const std::filesystem::path& path);

// Finds, in a WeSpeaker-style embedding graph (single input, single output, final Gemm or
// MatMul fed by Concat(mean over time, std over time) of one tensor), the pooling input and the
// final linear layer. Fails, naming the model, when the graph does not have that shape.
StatisticsPoolingSplit split_before_statistics_pooling(const std::string& model_bytes,
                                                       const std::string& model_name);

// Whether the graph holds float16 weights or constants (a float16 export). ONNX Runtime's CPU
// kernels then run float32 between casts, and round differently with the batch size.
bool has_float16_constants(const std::string& model_bytes, const std::string& model_name);

// Whether the graph builds SincNet-style filters at run time (a Sin node) from float16 tensors.
// A float16 export of pyannote's segmentation does: its first-layer filters come out visibly
// off (docs/segmentation.md), and tools/fold_sincnet_filters.py (which leaves no Sin node) fixes
// it.
bool computes_filters_in_float16(const std::string& model_bytes, const std::string& model_name);

}  // namespace parley::graph
