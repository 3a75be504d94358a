#pragma once
// What a segmentation run reads and where its scores go. SegmentationModel::run takes one
// SegmentationFeed, which each caller implements: the segment-and-embed scheduler (chunks of many
// recordings, scores queued to the embeddings), a caller with its chunks already cut
// (SegmentationModel::run over an array), tests and benchmarks. A caller of one window implements
// read_chunk and keeps the scores (ScoreKeepingFeed); the rest has defaults.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/ndarray.h"

namespace parley::stages {

class SegmentationFeed {
 public:
  // Where a chunk lies: its recording (any key, the same for every chunk of one recording in a
  // run), the recording's samples and the chunk's first sample there.
  struct ChunkOrigin {
    std::size_t recording = 0;
    std::span<const float> samples;
    std::int64_t start_sample = 0;
  };

  SegmentationFeed() = default;
  SegmentationFeed(const SegmentationFeed&) = default;
  SegmentationFeed& operator=(const SegmentationFeed&) = default;
  virtual ~SegmentationFeed() = default;

  // Writes chunk `chunk` (samples_per_chunk values, zero-padded past the end of the audio) into
  // `samples`. Called concurrently from worker threads for distinct chunks.
  virtual void read_chunk(std::size_t chunk, std::span<float> samples) = 0;

  // Each call's log-probabilities [count, frames, classes] and its first chunk, in chunk order,
  // one call at a time; the run keeps no copy. A call that blocks holds back the workers (which
  // is how a slow consumer limits how far segmentation runs ahead); an exception thrown here
  // stops the run.
  virtual void take_scores(std::size_t first_chunk, NdArray<float> log_probabilities) = 0;

  // Where chunk `chunk` lies, which lets the chunks of one recording share the first convolution;
  // called concurrently from worker threads. None (the default), or a start that is not a
  // multiple of the convolution's stride: the chunk's first convolution is its own.
  virtual std::optional<ChunkOrigin> origin(std::size_t /*chunk*/) { return std::nullopt; }

  // The number of chunks finished so far (serialised, increasing), before the scores of the call
  // that finished them are taken. Default: ignored.
  virtual void chunks_done(std::size_t /*count*/) {}
};

// A feed whose caller wants the run's scores at once: it keeps every call's, and scores() joins
// them.
class ScoreKeepingFeed : public SegmentationFeed {
 public:
  void take_scores(std::size_t first_chunk, NdArray<float> log_probabilities) override {
    if (log_probabilities.rank() != 3 || first_chunk != chunks_ ||
        (!calls_.empty() && (log_probabilities.dim(1) != calls_.front().dim(1) ||
                             log_probabilities.dim(2) != calls_.front().dim(2)))) {
      fail(
          "segmentation scores: a call's scores from chunk {} do not continue the {} chunk(s) kept",
          first_chunk, chunks_);
    }
    chunks_ += log_probabilities.dim(0);
    calls_.push_back(std::move(log_probabilities));
  }

  // The scores taken so far as one array [chunks, frames, classes] in chunk order, moved out (the
  // feed is then empty); [0, 0, 0] when none were taken.
  NdArray<float> take_all() {
    std::vector<NdArray<float>> calls = std::exchange(calls_, {});
    const std::size_t chunks = std::exchange(chunks_, 0);
    if (calls.empty()) return NdArray<float>({0, 0, 0});
    if (calls.size() == 1) return std::move(calls.front());
    NdArray<float> joined({chunks, calls.front().dim(1), calls.front().dim(2)});
    float* target = joined.data();
    for (const auto& call : calls) target = std::copy_n(call.data(), call.size(), target);
    return joined;
  }

 private:
  std::vector<NdArray<float>> calls_;
  std::size_t chunks_ = 0;  // in calls_
};

}  // namespace parley::stages
