#pragma once
// The networks' part of diarizing: recordings are fed in, their chunks go to segmentation as one
// stream of model calls (a batch may hold the end of one recording and the start of the next),
// and each recording's segmentation scores and embeddings come out. Segmentation batches run
// across recordings; embeddings go recording by recording, in the same chunk ranges as for one
// recording alone, streamed behind segmentation (a bounded queue between the two) or after it.
//
// Each recording's intermediates equal those of feeding it alone whenever segmentation runs one
// chunk per call or pads every call to its whole batch (the CPU); on an accelerator a chunk's row
// in a batch can change ONNX Runtime's kernels in the last bits.
#include <cstddef>
#include <functional>
#include <span>
#include <vector>

#include "core/ndarray.h"
#include "core/progress.h"
#include "core/stage_timer.h"
#include "frames/sliding_window.h"
#include "pipeline/diarizer.h"
#include "stages/segmentation.h"

namespace parley::pipeline {

// Embeddings [count, speakers, D] of chunks [first_chunk, first_chunk + count) of one recording
// from their binarized segmentations [count, frames, speakers]. Called with ascending,
// contiguous ranges per recording, one recording after the other, never concurrently.
using EmbedChunkRange =
    std::function<NdArray<float>(std::span<const float> samples, const frames::ChunkPlan& plan,
                                 std::size_t first_chunk, const NdArray<float>& segmentations)>;

struct SegmentEmbedSettings {
  double chunk_seconds = 10.0;
  double step_seconds = 1.0;
  // Embed while later chunks are still being segmented; results are identical either way.
  bool streaming = true;
  // Chunks per embedding call (a whole pass when the shared trunk pools in its graph).
  std::size_t embedding_batch = 32;
  std::size_t embedding_dimension = 0;
  // The embedding reads the whole recording before its first range (the shared trunk's blocks,
  // margins and recording-wide mean): it waits for all of a still-arriving recording.
  bool embedding_reads_whole_recording = false;
  // SegmentationModel::plan_calls's rows: 0, the whole batch (the accelerator's multiple).
  std::size_t segmentation_rows = 0;
};

class SegmentEmbedScheduler {
 public:
  // `segmentation` and `embed` must outlive the scheduler; one run at a time on `segmentation`.
  SegmentEmbedScheduler(stages::SegmentationModel& segmentation, EmbedChunkRange embed,
                        SegmentEmbedSettings settings);
  ~SegmentEmbedScheduler();
  SegmentEmbedScheduler(const SegmentEmbedScheduler&) = delete;
  SegmentEmbedScheduler& operator=(const SegmentEmbedScheduler&) = delete;

  // Feeds one recording (16 kHz mono) and returns its index among those fed. Its samples are
  // read during run(), so they must stay valid until it returns; with `needed` they may still be
  // arriving (the span has the recording's final length).
  std::size_t add(std::span<const float> samples);
  std::size_t recording_count() const;
  std::size_t chunk_count() const;  // of every recording fed so far

  // Segments and embeds every recording fed, and returns their intermediates in the order fed;
  // the scheduler is then empty, ready for the next feed. `times[i]` receives recording i's
  // share of segmentation (by chunks) and its own embedding time. `passed` and `needed` as for
  // Diarizer::diarize, with the recording's index.
  std::vector<DiarizationIntermediates> run(std::vector<StageTimes>& times, ProgressSink& progress,
                                            const SamplesPassed& passed = {},
                                            const SamplesNeeded& needed = {});

 private:
  struct Recording;
  struct SegmentedBatch;
  class ChunkStream;  // the segmentation side of a run: its SegmentationFeed
  class Run;          // one run: the embedding side and the intermediates
  // The recording that chunk `chunk` of the stream of every recording's chunks belongs to.
  static std::size_t recording_of(const std::vector<Recording>& recordings, std::size_t chunk);

  stages::SegmentationModel& segmentation_;
  EmbedChunkRange embed_;
  SegmentEmbedSettings settings_;
  std::vector<Recording> recordings_;
  std::size_t chunk_count_ = 0;
};

}  // namespace parley::pipeline
