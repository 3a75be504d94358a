#include "pipeline/segment_embed_scheduler.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <iterator>
#include <optional>
#include <span>
#include <stdexcept>
#include <thread>
#include <utility>

#include "core/bounded_queue.h"
#include "core/sample_rate.h"
#include "frames/powerset.h"

namespace parley::pipeline {
namespace {

// One past the last sample of the recording that chunk `chunk` holds.
std::size_t chunk_end(const ChunkPlan& plan, std::int64_t chunk) {
  return static_cast<std::size_t>(plan.chunk_offset(chunk) + plan.valid_samples(chunk));
}

}  // namespace

// One recording fed: where its chunks sit in the stream of all chunks.
struct SegmentEmbedScheduler::Recording {
  std::span<const float> samples;
  ChunkPlan plan;
  std::size_t first_chunk = 0;  // in the stream of every recording's chunks
  std::size_t chunk_count = 0;
  std::size_t embedded = 0;  // chunks of this recording embedded so far
  // Its binarized segmentations while the networks run, as one powerset class a frame
  // [chunk_count, frames]: a twelfth of the float activations, which only its finished
  // recording gets (2 MB an hour instead of 25 MB, held from the first batch on).
  std::vector<std::uint8_t> powerset_classes;
  std::size_t frames = 0;  // per chunk
};

// A call's log-probabilities on their way from segmentation to the embeddings.
struct SegmentEmbedScheduler::SegmentedBatch {
  std::size_t first_chunk = 0;
  NdArray<float> log_probabilities;
};

std::size_t SegmentEmbedScheduler::recording_of(const std::vector<Recording>& recordings,
                                                std::size_t chunk) {
  const auto after = std::upper_bound(
      recordings.begin(), recordings.end(), chunk,
      [](std::size_t value, const Recording& recording) { return value < recording.first_chunk; });
  return static_cast<std::size_t>(std::distance(recordings.begin(), after) - 1);
}

// Segmentation's feed in a run: every recording's chunks as one stream, each read once its
// recording has it (`needed`), and each call's scores queued for the embeddings.
class SegmentEmbedScheduler::ChunkStream final : public SegmentationFeed {
 public:
  // `progress`: where the chunks done are counted, or null.
  ChunkStream(const std::vector<Recording>& recordings, std::size_t samples_read_past_chunk,
              const SamplesNeeded& needed, BoundedQueue<SegmentedBatch>& queue,
              ProgressSink* progress)
      : recordings_(recordings),
        samples_read_past_chunk_(samples_read_past_chunk),
        needed_(needed),
        queue_(queue),
        progress_(progress) {}

  void read_chunk(std::size_t chunk, std::span<float> samples) override {
    const std::size_t r = recording_of(recordings_, chunk);
    const Recording& recording = recordings_[r];
    const auto local = static_cast<std::int64_t>(chunk - recording.first_chunk);
    if (needed_) {
      // The shared first convolution reads the recording past the chunk's end.
      needed_(r, std::min(recording.samples.size(),
                          chunk_end(recording.plan, local) + samples_read_past_chunk_));
    }
    copy_chunk(recording.samples, recording.plan, local, samples);
  }

  std::optional<ChunkOrigin> origin(std::size_t chunk) override {
    const std::size_t r = recording_of(recordings_, chunk);
    const Recording& recording = recordings_[r];
    return ChunkOrigin{
        r, recording.samples,
        recording.plan.chunk_offset(static_cast<std::int64_t>(chunk - recording.first_chunk))};
  }

  void chunks_done(std::size_t count) override {
    if (progress_ != nullptr) progress_->update(count);
  }

  void take_scores(std::size_t first_chunk, NdArray<float> log_probabilities) override {
    // Measured up to the hand-over of each call, not past the last: on a busy machine the
    // worker threads' teardown after it would otherwise count as segmentation while the last
    // embeddings already run.
    seconds_ = seconds_since(start_);
    if (!queue_.push({first_chunk, std::move(log_probabilities)})) {
      throw std::runtime_error("embedding stopped");
    }
  }

  // From the stream's creation to the hand-over of the last call so far.
  double seconds() const { return seconds_; }

 private:
  const std::vector<Recording>& recordings_;
  std::size_t samples_read_past_chunk_;
  const SamplesNeeded& needed_;
  BoundedQueue<SegmentedBatch>& queue_;
  ProgressSink* progress_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  double seconds_ = 0.0;
};

SegmentEmbedScheduler::SegmentEmbedScheduler(SegmentationModel& segmentation, EmbedChunkRange embed,
                                             SegmentEmbedSettings settings)
    : segmentation_(segmentation), embed_(std::move(embed)), settings_(settings) {}

SegmentEmbedScheduler::~SegmentEmbedScheduler() = default;

std::size_t SegmentEmbedScheduler::add(std::span<const float> samples) {
  Recording recording;
  recording.samples = samples;
  recording.plan = plan_chunks(static_cast<std::int64_t>(samples.size()), kSampleRate,
                               settings_.chunk_seconds, settings_.step_seconds);
  recording.first_chunk = chunk_count_;
  recording.chunk_count = static_cast<std::size_t>(recording.plan.num_chunks());
  chunk_count_ += recording.chunk_count;
  recordings_.push_back(std::move(recording));
  return recordings_.size() - 1;
}

std::size_t SegmentEmbedScheduler::recording_count() const { return recordings_.size(); }

std::size_t SegmentEmbedScheduler::chunk_count() const { return chunk_count_; }

std::vector<DiarizationIntermediates> SegmentEmbedScheduler::run(std::vector<StageTimes>& times,
                                                                 ProgressSink& progress,
                                                                 const SamplesPassed& passed,
                                                                 const SamplesNeeded& needed) {
  using Clock = std::chrono::steady_clock;
  const auto networks_start = Clock::now();
  // Whatever happens, the scheduler is empty for the next feed.
  std::vector<Recording> work = std::move(recordings_);
  recordings_ = {};
  const std::size_t chunk_count = std::exchange(chunk_count_, 0);
  times.resize(work.size());
  std::vector<DiarizationIntermediates> intermediates(work.size());
  for (std::size_t r = 0; r < work.size(); ++r) {
    intermediates[r].duration_seconds = static_cast<double>(work[r].samples.size()) / kSampleRate;
    intermediates[r].chunks = work[r].plan.chunks();
  }
  const auto recording_of = [&work](std::size_t chunk) {
    return SegmentEmbedScheduler::recording_of(work, chunk);
  };
  const std::size_t embedding_batch = std::max<std::size_t>(settings_.embedding_batch, 1);
  const std::size_t dimension = settings_.embedding_dimension;
  const Powerset powerset(3, 2);
  const auto speakers = static_cast<std::size_t>(powerset.num_classes());
  // Chunks [first, first + count) of a recording as binarized segmentations [count, frames,
  // speakers].
  const auto segmentations_of = [&powerset, speakers](const Recording& recording, std::size_t first,
                                                      std::size_t count) {
    NdArray<float> segmentations({count, recording.frames, speakers});
    powerset.write_multilabel(std::span(recording.powerset_classes)
                                  .subspan(first * recording.frames, count * recording.frames),
                              segmentations.values());
    return segmentations;
  };

  // Segmentation batches travel to the embedding loop through this queue. Streaming, they are
  // embedded while later chunks are still being segmented (on a GPU the embeddings run while
  // the CPU segments); otherwise segmentation finishes first. Embedding always goes in the same
  // `embedding_batch` chunk ranges of each recording, so both orders give identical results.
  const std::size_t capacity =
      settings_.streaming ? std::max<std::size_t>(2 * embedding_batch, 1) : chunk_count + 1;
  BoundedQueue<SegmentedBatch> queue(capacity);

  ChunkStream chunks(work, segmentation_.samples_read_past_chunk(), needed, queue,
                     settings_.streaming ? nullptr : &progress);
  auto segment = [&] {
    try {
      if (chunk_count > 0) {
        segmentation_.run(chunk_count, chunks, settings_.segmentation_cpu_rows);
      }
      queue.close();
    } catch (...) {
      queue.close(std::current_exception());
    }
  };

  std::jthread segmentation_thread;
  if (settings_.streaming) {
    // One stage for both networks: a chunk counts once when segmented and once when embedded,
    // so the count moves from the first segmented batch on instead of waiting for the first
    // embedding range (32 chunks, or a whole pass of the shared trunk).
    progress.begin("segmentation+embedding", 2 * chunk_count);
    segmentation_thread = std::jthread(segment);
  } else {
    progress.begin("segmentation", chunk_count);
    segment();
    progress.end();
    progress.begin("embedding", chunk_count);
  }
  // Should embedding fail, the segmentation thread must not wait forever on a full queue.
  struct CancelOnExit {
    BoundedQueue<SegmentedBatch>& queue;
    ~CancelOnExit() { queue.cancel(); }
  } cancel_on_exit{queue};

  std::size_t segmented = 0;       // chunks of the stream segmented so far
  std::size_t embedded_total = 0;  // for progress
  std::size_t current = 0;         // the recording being embedded
  // Reported from this thread only, so the counts reach the sink in order.
  const auto report_progress = [&] {
    progress.update(settings_.streaming ? segmented + embedded_total : embedded_total);
  };
  for (;;) {
    std::optional<SegmentedBatch> batch = queue.pop();
    if (batch) {
      const std::vector<std::uint8_t> classes = powerset.decode(batch->log_probabilities);
      const std::size_t rows = batch->log_probabilities.dim(0);
      const std::size_t frames = batch->log_probabilities.dim(1);
      for (std::size_t row = 0; row < rows; ++row) {
        const std::size_t chunk = batch->first_chunk + row;
        const std::size_t r = recording_of(chunk);
        Recording& recording = work[r];
        if (recording.powerset_classes.empty()) {
          recording.frames = frames;
          recording.powerset_classes.resize(recording.chunk_count * frames);
          intermediates[r].embeddings =
              NdArray<float>({recording.chunk_count, speakers, dimension});
        }
        std::copy_n(classes.data() + row * frames, frames,
                    recording.powerset_classes.data() + (chunk - recording.first_chunk) * frames);
      }
      segmented = batch->first_chunk + rows;
      if (settings_.streaming) report_progress();
    }
    // Embed whole ranges of the current recording as they become available, its last (short)
    // range only once all its chunks are segmented, then move on to the next recording.
    while (current < work.size()) {
      Recording& recording = work[current];
      const std::size_t available =
          std::min(segmented - std::min(segmented, recording.first_chunk), recording.chunk_count);
      const std::size_t waiting = available - recording.embedded;
      const bool complete = available == recording.chunk_count;
      if (waiting == 0 && complete) {
        if (recording.chunk_count > 0) {
          intermediates[current].segmentations =
              segmentations_of(recording, 0, recording.chunk_count);
          recording.powerset_classes = {};
        }
        ++current;
        continue;
      }
      if (waiting < embedding_batch && !(complete && waiting > 0)) break;
      const std::size_t count = std::min(embedding_batch, waiting);
      DiarizationIntermediates& target = intermediates[current];
      if (needed) {
        // The shared trunk reads ahead of its chunks (blocks, margins, a recording-wide mean):
        // it starts once the whole recording is there.
        needed(current, settings_.embedding_reads_whole_recording
                            ? recording.samples.size()
                            : chunk_end(recording.plan,
                                        static_cast<std::int64_t>(recording.embedded + count - 1)));
      }
      const auto embedding_start = Clock::now();
      const NdArray<float> embedded_range =
          embed_(recording.samples, recording.plan, recording.embedded,
                 segmentations_of(recording, recording.embedded, count));
      std::copy(embedded_range.values().begin(), embedded_range.values().end(),
                target.embeddings.data() + recording.embedded * embedded_range.size() / count);
      times[current].add("embedding", seconds_since(embedding_start));
      recording.embedded += count;
      if (passed) {
        // The shared trunk's blocks (two minutes) and margins reach back before the next chunk.
        constexpr std::int64_t kReachBackSamples = 180 * kSampleRate;
        const std::int64_t next_start =
            static_cast<std::int64_t>(recording.embedded) * recording.plan.step_samples;
        if (next_start > kReachBackSamples) {
          passed(current, static_cast<std::size_t>(next_start - kReachBackSamples));
        }
      }
      embedded_total += count;
      report_progress();
    }
    if (!batch) break;
  }
  progress.end();
  if (segmentation_thread.joinable()) segmentation_thread.join();
  // The tail where only embedding runs, and the networks are half idle (SPDLOG_LEVEL=debug).
  spdlog::debug(
      "{} recording(s), {} chunks: segmentation handed on its last batch {:.3f} s after "
      "it started, embedding ended {:.3f} s after it",
      work.size(), chunk_count, chunks.seconds(), seconds_since(networks_start));
  // Segmentation ran over every recording at once: each gets its share by chunks. With
  // streaming the stages overlap: each is its own working time, and their sum can exceed the
  // wall time of both together.
  for (std::size_t r = 0; r < work.size(); ++r) {
    const double share = chunk_count > 0 ? static_cast<double>(work[r].chunk_count) /
                                               static_cast<double>(chunk_count)
                                         : 0.0;
    StageTimes ordered;
    ordered.add("segmentation", chunks.seconds() * share);
    for (const auto& [stage, seconds] : times[r].entries()) ordered.add(stage, seconds);
    ordered.add("embedding", 0.0);
    times[r] = ordered;
  }
  return intermediates;
}

}  // namespace parley::pipeline
