#pragma once
// How far along time a network's output frames reach into its input, read from the ONNX graph:
// what the shared embedding trunk's margins must cover (stages/shared_trunk.h). Walks the
// graph from the input, following the time axis through Transpose/Unsqueeze/Squeeze, growing the
// reach at every Conv and pooling window (kernel, stride, dilation, pads along that axis), and
// taking the wider branch where branches meet (residual Adds). An operator that mixes the whole
// time axis (global pooling, normalisation over time, recurrent layers, attention) makes the
// field global; one this walk does not know makes it unknown.
#include <cstdint>
#include <string>

namespace parley::graph {

struct TimeReceptiveField {
  enum class Kind { kLocal, kGlobal, kUnknown };
  Kind kind = Kind::kUnknown;
  std::int64_t stride = 1;  // input frames per output frame
  // Input frames an output frame depends on before and after its first input frame
  // (output frame j starts at input frame j * stride).
  std::int64_t before = 0;
  std::int64_t after = 0;
  std::string reason;  // kGlobal / kUnknown: the node that made it so

  std::int64_t reach() const { return before > after ? before : after; }
  std::string to_string() const;
};

// Whether `op` is applied element by element (broadcasting constants such as biases or
// batch-norm statistics), so that time frames pass through it unmixed.
bool is_elementwise_op(const std::string& op);

// The field of `output` with respect to input `input`, whose time axis is `input_time_axis`.
// Fails naming `model_name` when the bytes are not a model or the names are not in it.
TimeReceptiveField time_receptive_field(const std::string& model_bytes,
                                        const std::string& model_name, const std::string& input,
                                        std::int64_t input_time_axis, const std::string& output);

}  // namespace parley::graph
