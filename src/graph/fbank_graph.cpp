#include "graph/fbank_graph.h"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <set>

#include "core/error.h"
#include "graph/graph_edit.h"

namespace parley::graph {
namespace {

using Names = FbankGraphNames;

// CumSum (the window means) came with opset 11.
constexpr std::int64_t kMinimumOpset = 11;

// `value` rounded to the 10 mantissa bits TF32 multiplies with, so TF32 holds it exactly.
float round_to_tf32(float value) {
  auto bits = std::bit_cast<std::uint32_t>(value);
  bits = (bits + 0x1000u) & 0xFFFFE000u;
  return std::bit_cast<float>(bits);
}

// Appends the front end to `graph`; the features come out under `features_output`. Returns the
// uncentred log mel's name.
std::string append_front_end(onnx::GraphProto& graph, std::int64_t opset,
                             const FbankGraphSpec& spec, const std::string& features_output) {
  GraphAppender g(graph, opset, "fbank");
  g.take(features_output);
  g.float_input(Names::kSamples, {"1", "samples"});
  g.float_input(Names::kFrameIndex, {"frames"});
  g.float_input(Names::kWindowLow, {"frames"});
  g.float_input(Names::kWindowHigh, {"frames"});

  const auto rows = static_cast<std::int64_t>(2 * spec.spectrum_bins);
  const auto width = static_cast<std::int64_t>(spec.window_size);
  const auto bins = static_cast<std::int64_t>(spec.mel_bins);

  // Samples split into their float16 rounding (exact in TF32) and the rest.
  const std::string column = g.ints("column_shape", {1, 1, -1});
  const std::string samples = g.node("Reshape", {Names::kSamples, column}, "samples_column");
  const std::string half = g.cast(samples, onnx::TensorProto::FLOAT16, "samples_half");
  const std::string high = g.cast(half, onnx::TensorProto::FLOAT, "samples_high");
  const std::string low = g.node("Sub", {samples, high}, "samples_low");
  const std::string channels = g.node("Concat", {high, high, low}, "samples_split");
  g.int_attribute("axis", 1);
  // Kernel [rows, 3, width]: high x high, high x low, low x high (low x low is below float32).
  std::vector<float> kernel(static_cast<std::size_t>(rows * 3 * width));
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t i = 0; i < width; ++i) {
      const double value = spec.frame_transform[static_cast<std::size_t>(r * width + i)];
      const float rounded = round_to_tf32(static_cast<float>(value));
      const auto residual = static_cast<float>(value - static_cast<double>(rounded));
      const auto at = [&](std::int64_t channel) {
        return static_cast<std::size_t>((r * 3 + channel) * width + i);
      };
      kernel[at(0)] = rounded;
      kernel[at(1)] = residual;
      kernel[at(2)] = rounded;
    }
  }
  const std::string weights = g.floats("frame_transform", {rows, 3, width}, kernel);
  const std::string spectrum = g.node("Conv", {channels, weights}, "spectrum");  // [1, rows, T]
  g.ints_attribute("kernel_shape", {width});
  g.ints_attribute("strides", {static_cast<std::int64_t>(spec.window_shift)});
  const std::string squares = g.node("Mul", {spectrum, spectrum}, "spectrum_squares");
  // Mel weights [bins, rows]: the same weights on a bin's real and imaginary squares.
  std::vector<float> mel(static_cast<std::size_t>(bins * rows));
  for (std::int64_t m = 0; m < bins; ++m) {
    for (std::size_t k = 0; k < spec.spectrum_bins; ++k) {
      const auto value = static_cast<float>(
          spec.mel_weights[static_cast<std::size_t>(m) * spec.spectrum_bins + k]);
      mel[static_cast<std::size_t>(m * rows) + k] = value;
      mel[static_cast<std::size_t>(m * rows) + spec.spectrum_bins + k] = value;
    }
  }
  const std::string energies =
      g.node("MatMul", {g.floats("mel_weights", {bins, rows}, mel), squares}, "mel_energies");
  const std::string floor = g.floats("log_floor", {}, {static_cast<float>(spec.log_floor)});
  const std::string log_mel_by_bin =
      g.node("Log", {g.node("Max", {energies, floor}, "mel_floored")}, "log_mel_by_bin");
  std::string log_mel = g.node("Transpose", {log_mel_by_bin}, "log_mel");  // [1, T, bins]
  g.ints_attribute("perm", {0, 2, 1});

  // Window means: differences of the cumulative sum over frames, in float64. ONNX Runtime's
  // CUDA CumSum sums every prefix anew (quadratic in the frames: tens of ms for a pass), so
  // the frames go in blocks: a lower-triangular product sums within each block, CumSum only
  // over the few block totals.
  const std::string wide = g.cast(log_mel, onnx::TensorProto::DOUBLE, "log_mel_double");
  const auto block = static_cast<std::int64_t>(kFbankGraphFrameBlock);
  const std::string blocks =
      g.node("Reshape", {wide, g.ints("block_shape", {-1, block, bins})}, "frame_blocks");
  std::vector<double> triangle(static_cast<std::size_t>(block * block), 0.0);
  for (std::int64_t row = 0; row < block; ++row) {
    for (std::int64_t earlier = 0; earlier <= row; ++earlier) {
      triangle[static_cast<std::size_t>(row * block + earlier)] = 1.0;
    }
  }
  const std::string within = g.node(
      "MatMul", {g.doubles("lower_triangle", {block, block}, triangle), blocks}, "block_sums");
  const std::string totals =
      g.node("Gather", {within, g.ints("last_in_block", {block - 1})}, "block_totals");
  g.int_attribute("axis", 1);  // [blocks, 1, bins]
  auto* axis = graph.add_initializer();
  const std::string axis_name = g.fresh("block_axis");
  axis->set_name(axis_name);
  axis->set_data_type(onnx::TensorProto::INT64);
  const std::int64_t zero_axis = 0;
  axis->set_raw_data(&zero_axis, sizeof(zero_axis));
  const std::string offsets = g.node("CumSum", {totals, axis_name}, "block_offsets");
  g.int_attribute("exclusive", 1);
  const std::string sums = g.node("Reshape",
                                  {g.node("Add", {within, offsets}, "cumulative_blocks"),
                                   g.ints("frames_shape", {1, -1, bins})},
                                  "cumulative");
  const std::string zeros =
      g.doubles("zero_row", {1, 1, bins}, std::vector<double>(static_cast<std::size_t>(bins), 0.0));
  const std::string prefix = g.node("Concat", {zeros, sums}, "prefix_sums");  // [1, T + 1, bins]
  g.int_attribute("axis", 1);
  const auto gather = [&](const std::string& data, const std::string& index_input,
                          const std::string& stem) {
    const std::string index = g.cast(index_input, onnx::TensorProto::INT64, stem + "_index");
    std::string gathered = g.node("Gather", {data, index}, stem);
    g.int_attribute("axis", 1);
    return gathered;
  };
  const std::string upper = gather(prefix, Names::kWindowHigh, "upper_sums");
  const std::string lower = gather(prefix, Names::kWindowLow, "lower_sums");
  const std::string counts =
      g.node("Reshape",
             {g.cast(g.node("Sub", {Names::kWindowHigh, Names::kWindowLow}, "window_frames"),
                     onnx::TensorProto::DOUBLE, "window_frames_double"),
              g.ints("count_shape", {1, -1, 1})},
             "window_counts");
  const std::string means =
      g.node("Div", {g.node("Sub", {upper, lower}, "window_sums"), counts}, "window_means");
  const std::string own = gather(wide, Names::kFrameIndex, "own_log_mel");
  const std::string centred = g.node("Sub", {own, means}, "centred");
  g.cast(centred, onnx::TensorProto::FLOAT, "features");
  g.name_output(features_output);
  return log_mel;
}

}  // namespace

void FbankGraphSpec::validate() const {
  if (window_size == 0 || window_shift == 0 || spectrum_bins == 0 || mel_bins == 0) {
    fail("fbank graph: window {} shift {} spectrum bins {} mel bins {}: none may be 0", window_size,
         window_shift, spectrum_bins, mel_bins);
  }
  if (frame_transform.size() != 2 * spectrum_bins * window_size) {
    fail("fbank graph: the frame transform holds {} values, not 2 x {} x {}",
         frame_transform.size(), spectrum_bins, window_size);
  }
  if (mel_weights.size() != mel_bins * spectrum_bins) {
    fail("fbank graph: the mel weights hold {} values, not {} x {}", mel_weights.size(), mel_bins,
         spectrum_bins);
  }
  if (!(log_floor > 0.0)) fail("fbank graph: the log floor must be positive (got {})", log_floor);
}

std::string build_fbank_model(const FbankGraphSpec& spec, const std::string& features_output) {
  spec.validate();
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("parley");
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(14);
  onnx::GraphProto& graph = *model.mutable_graph();
  graph.set_name("fbank");
  const std::string log_mel = append_front_end(graph, 14, spec, features_output);
  // The uncentred log mel as an output of its own name.
  GraphAppender outputs(graph, 14, "fbank");
  outputs.node("Identity", {log_mel}, "log_mel_output");
  outputs.name_output(Names::kLogMel);
  outputs.float_output(Names::kLogMel, {"1", "span", "bins"});
  outputs.float_output(features_output, {"1", "frames", "bins"});
  return serialize_model(model, "fbank graph");
}

std::string prepend_fbank(const std::string& model_bytes, const std::string& features_input,
                          const FbankGraphSpec& spec, const std::string& model_name) {
  spec.validate();
  onnx::ModelProto model = parse_model(model_bytes, model_name);
  const std::int64_t opset = default_domain_opset(model);
  if (opset < kMinimumOpset) {
    fail("{}: opset {} is older than the {} the fbank graph needs; compute features on the host",
         model_name, opset, kMinimumOpset);
  }
  onnx::GraphProto& graph = *model.mutable_graph();
  std::set<std::string> names;
  collect_names(graph, names);
  for (const char* name :
       {Names::kSamples, Names::kFrameIndex, Names::kWindowLow, Names::kWindowHigh}) {
    if (names.count(name) > 0) {
      fail("{}: already has a tensor named '{}'; compute features on the host", model_name, name);
    }
  }
  const auto old_inputs = graph.input();
  const auto features = std::find_if(old_inputs.begin(), old_inputs.end(), [&](const auto& input) {
    return input.name() == features_input;
  });
  if (features == old_inputs.end()) fail("{}: has no input '{}'", model_name, features_input);
  const int old_nodes = graph.node_size();
  graph.clear_input();
  append_front_end(graph, opset, spec, features_input);
  // The front end's inputs first, then the model's own but the features.
  for (const auto& input : old_inputs) {
    if (input.name() != features_input) *graph.add_input() = input;
  }
  // Nodes in topological order: the front end's before the model's.
  auto* nodes = graph.mutable_node();
  std::rotate(nodes->begin(), nodes->begin() + old_nodes, nodes->end());
  return serialize_model(model, model_name + " (with fbank)");
}

}  // namespace parley::graph
