#pragma once
// Segmentation's first convolution computed once per recording and shared by its overlapping
// chunks (graph/first_convolution_split.h says why that is exact up to rounding). The recording
// is convolved in blocks of a fixed number of frames aligned to its first sample, each block
// once, whichever chunk asks first; a chunk's input is its slice of the blocks, rescaled by its
// own waveform normalisation. A frame's value depends only on the recording and the block it
// lies in, never on threads, batches or which chunk asked, so results are the same for any of
// those. Blocks live in a small cache, least recently used out first: one that is needed
// again after leaving is computed again, to the same values.
#include <cstddef>
#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

#include "core/ndarray.h"
#include "graph/first_convolution_split.h"
#include "runtime/onnx_session.h"

namespace parley::stages {

class SharedFirstConvolution {
 public:
  // Frames per block: one second at the export's stride of 10 samples.
  static constexpr std::int64_t kBlockFrames = 1600;

  // `session` configures the convolution's own session (CPU, one thread); `cached_blocks` is
  // how many blocks stay (half a megabyte each for 80 filters).
  SharedFirstConvolution(const graph::FirstConvolutionSplit& split,
                         const runtime::SessionConfig& session, std::size_t cached_blocks,
                         const std::string& model_name);

  std::int64_t filters() const { return filters_; }
  std::int64_t stride() const { return split_.stride; }
  // Frames of the rest model's input for a chunk of `window_samples`.
  std::int64_t frames_per_chunk(std::int64_t window_samples) const {
    return (window_samples - split_.kernel) / split_.stride + 1;
  }

  // The most samples past a chunk's end that chunk_input reads from `recording`: the rest of
  // the block holding the chunk's last frame.
  std::size_t samples_read_past_chunk() const {
    return static_cast<std::size_t>(kBlockFrames * split_.stride + split_.kernel);
  }

  // Writes the rest model's input [filters, frames_per_chunk] for the chunk of `recording_key`
  // whose samples `chunk_samples` start at `start_sample` of `recording` (zero past its end).
  // `start_sample` must be a multiple of stride(). Safe to call from several threads.
  void chunk_input(std::size_t recording_key, std::span<const float> recording,
                   std::int64_t start_sample, std::span<const float> chunk_samples,
                   std::span<float> out);

  // Forgets every block (recording keys are reused by the next run).
  void clear();

  // Blocks convolved so far (a block computed twice counts twice): for tests.
  std::size_t blocks_computed() const;

 private:
  using Block = std::shared_ptr<const NdArray<float>>;  // [1, filters, kBlockFrames]
  Block block(std::size_t recording_key, std::span<const float> recording, std::int64_t index);
  Block convolve_block(std::span<const float> recording, std::int64_t index);

  graph::FirstConvolutionSplit split_;
  std::string model_name_;
  std::unique_ptr<runtime::OnnxSession> session_;
  std::int64_t filters_ = 0;
  std::vector<double> filter_sums_;  // sum of each filter's taps

  struct Entry {
    std::shared_future<Block> block;
    std::uint64_t last_use = 0;
  };
  mutable std::mutex mutex_;
  std::map<std::pair<std::size_t, std::int64_t>, Entry> blocks_;
  std::size_t capacity_;
  std::uint64_t clock_ = 0;
  std::size_t computed_ = 0;
};

}  // namespace parley::stages
