#pragma once
// Makes a convolutional trunk run on a longer input exactly as on its first `valid_frames`
// frames: a static-shape pass over a recording's end (graph/pooled_trunk_graph.h) has every
// pass one length, so the last one runs past the recording, where the host's trunk, run on the
// recording's frames only, sees its convolutions' zero padding.
//
// Walks the graph from the input along the time axis (as graph/receptive_field.h does) and, in
// front of every Conv, MaxPool, AveragePool or LpPool reached, sets the time positions at or past
// that operator's valid length to what its padding holds: zero, as a product with a 0/1 mask
// (a Where cost three times as much on the CPU; the values there are finite, the features of
// zero samples and what convolutions make of them), or -inf for MaxPool, through Where. The valid
// length of each operator's output follows from its kernel, stride, dilation, pads and ceil_mode
// along time, as the output length of a trunk run on the shorter input does, so a frame the
// shorter run computes reads the same values in both. Positions past the valid length hold
// anything: only masked inputs read them. Exact for convolutions and MaxPool; an AveragePool
// that leaves its padding out of the count (count_include_pad 0) still counts masked frames.
// Operators the walk does not follow (anything but element-wise operators, Transpose, Squeeze,
// Unsqueeze and these windows) end it: convolutions behind them are left as they are.
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph_edit.h"

namespace parley::graph {

struct ValidFramesMask {
  // [B] float: the valid length of the walked tensor `output` along its time axis, or the
  // length after the last window the walk rewrote when it lost track before `output`; empty when
  // it rewrote none.
  std::string output_length;
  int masked_operators = 0;  // Conv and pooling nodes given a masked input
};

// Rewrites `graph` (the nodes topologically sorted) so that `input`'s time axis
// `input_time_axis` (batch on axis 0) counts `valid_frames` ([B] float, whole numbers) frames
// per batch item. `g` appends the new nodes and names; `opset` is the graph's default domain's.
ValidFramesMask mask_past_valid_frames(onnx::GraphProto& graph, GraphAppender& g,
                                       std::int64_t opset, const std::string& input,
                                       std::int64_t input_time_axis,
                                       const std::string& valid_frames, const std::string& output);

// A bool mask [B, T] of positions t < length[b] along axis `time_axis` of `tensor` ([B] float
// `length`); the shared step of the walk and the pooling behind it.
std::string valid_time_mask(GraphAppender& g, std::int64_t opset, const std::string& tensor,
                            std::int64_t time_axis, const std::string& length,
                            const std::string& stem);

// Unsqueeze with its axes as an attribute before opset 13 and as an input since.
std::string unsqueeze(GraphAppender& g, std::int64_t opset, const std::string& input,
                      const std::vector<std::int64_t>& axes, const std::string& stem);

}  // namespace parley::graph
