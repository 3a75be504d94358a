#pragma once
// pyannote's segmentation model starts with SincNet: an instance normalisation of each chunk's
// waveform, then a strided convolution of it (80 filters of 251 taps, stride 10, no padding, no
// bias). The convolution is linear and shift-equivariant, so when chunks overlap at a step that
// is a multiple of its stride, each chunk's convolution is a slice of one convolution of the
// whole recording, rescaled by that chunk's own normalisation:
//   conv(g (x - m) / s + b) = (g / s) conv(x) + (b - g m / s) sum(w)
// At a 1 s step each sample is then convolved once instead of ten times (a fifth of the model's
// arithmetic on the CPU). This file cuts such a model in two at the convolution's output.
#include <cstdint>
#include <optional>
#include <string>

namespace parley::graph {

struct FirstConvolutionSplit {
  // samples [1, 1, n] ("samples") -> raw frames [1, filters, (n - kernel) / stride + 1]
  // ("frames"): the first convolution alone, on samples that were not normalised.
  std::string convolution_model;
  // The rest of the model: its input `rest_input` is the convolution's output [batch, filters,
  // frames]; its outputs are the original model's.
  std::string rest_model;
  std::string rest_input;
  std::int64_t filters = 0;
  std::int64_t kernel = 0;
  std::int64_t stride = 0;
  // The waveform's instance normalisation: scale, bias, epsilon (one channel).
  float norm_scale = 1.0f;
  float norm_bias = 0.0f;
  float norm_epsilon = 1e-5f;

  std::string to_string() const;
};

// The split, or nullopt when the graph does not begin with float32 InstanceNormalization of its
// single input feeding only a strided, unpadded, bias-free Conv (after constant `If`s are
// inlined): float16 graphs, other models. The filters may be an initializer or computed from
// constants (the official export builds them with Sin and Cos); the convolution model keeps
// whatever computes them. Fails, naming the model, when the bytes are not an ONNX model.
std::optional<FirstConvolutionSplit> split_first_convolution(const std::string& model_bytes,
                                                             const std::string& model_name);

}  // namespace parley::graph
