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
#include "core/trace.h"
#include "frames/powerset.h"

namespace parley::pipeline {
namespace {

// One past the last sample of the recording that chunk `chunk` holds.
std::size_t chunk_end(const frames::ChunkPlan& plan, std::int64_t chunk) {
  return static_cast<std::size_t>(plan.chunk_offset(chunk) + plan.valid_samples(chunk));
}

}  // namespace

// One recording fed: where its chunks sit in the stream of all chunks.
struct SegmentEmbedScheduler::Recording {
  std::span<const float> samples;
  frames::ChunkPlan plan;
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

// The segmentation side of a run: every recording's chunks as one stream fed to the model, each
// read once its recording has it (`needed`), each call's scores queued for the embedding side.
class SegmentEmbedScheduler::ChunkStream final : public stages::SegmentationFeed {
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

  // Runs `segmentation` over the stream's `chunk_count` chunks, then closes the queue, with the
  // error that stopped it if one did.
  void segment(stages::SegmentationModel& segmentation, std::size_t chunk_count, std::size_t rows) {
    try {
      start_ = std::chrono::steady_clock::now();
      if (chunk_count > 0) segmentation.run(chunk_count, *this, rows);
      queue_.close();
    } catch (...) {
      queue_.close(std::current_exception());
    }
  }

  void read_chunk(std::size_t chunk, std::span<float> samples) override {
    const std::size_t r = recording_of(recordings_, chunk);
    const Recording& recording = recordings_[r];
    const auto local = static_cast<std::int64_t>(chunk - recording.first_chunk);
    if (needed_) {
      // The shared first convolution reads the recording past the chunk's end.
      needed_(r, std::min(recording.samples.size(),
                          chunk_end(recording.plan, local) + samples_read_past_chunk_));
    }
    frames::copy_chunk(recording.samples, recording.plan, local, samples);
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

  // From the start of segment() to the hand-over of the last call so far.
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

// One run: the recordings taken from the scheduler, their intermediates as they fill, and the
// embedding side, which drains the queue that the segmentation side (ChunkStream) fills.
//
// Segmentation calls travel to the embedding side through that queue. Streaming, they are
// embedded while later chunks are still being segmented (on a GPU the embeddings run while the
// CPU segments); otherwise segmentation finishes first. Embedding always goes in the same
// `embedding_batch` chunk ranges of each recording, so both orders give identical results.
class SegmentEmbedScheduler::Run {
 public:
  Run(SegmentEmbedScheduler& scheduler, std::vector<Recording> recordings, std::size_t chunk_count,
      std::vector<StageTimes>& times, ProgressSink& progress, const SamplesPassed& passed,
      const SamplesNeeded& needed)
      : segmentation_(scheduler.segmentation_),
        embed_(scheduler.embed_),
        settings_(scheduler.settings_),
        recordings_(std::move(recordings)),
        chunk_count_(chunk_count),
        times_(times),
        progress_(progress),
        passed_(passed),
        needed_(needed),
        embedding_batch_(std::max<std::size_t>(settings_.embedding_batch, 1)),
        intermediates_(recordings_.size()),
        queue_(settings_.streaming ? std::max<std::size_t>(2 * embedding_batch_, 1)
                                   : chunk_count_ + 1),
        chunks_(recordings_, segmentation_.samples_read_past_chunk(), needed, queue_,
                settings_.streaming ? nullptr : &progress) {
    times_.resize(recordings_.size());
    for (std::size_t r = 0; r < recordings_.size(); ++r) {
      intermediates_[r].duration_seconds =
          static_cast<double>(recordings_[r].samples.size()) / kSampleRate;
      intermediates_[r].chunks = recordings_[r].plan.chunks();
    }
  }

  std::vector<DiarizationIntermediates> execute() {
    std::jthread segmentation_thread;
    if (settings_.streaming) {
      // One stage for both networks: a chunk counts once when segmented and once when embedded,
      // so the count moves from the first segmented call on instead of waiting for the first
      // embedding range (32 chunks, or a whole pass of the shared trunk).
      progress_.begin("segmentation+embedding", 2 * chunk_count_);
      // The segmentation thread's events go to the caller's trace, on a track of its own.
      segmentation_thread = std::jthread([this, lane = current_trace_lane()] {
        const TraceLaneBinding binding(lane ? lane.on_track(kTraceSegmentationTrack) : TraceLane{},
                                       "segmentation");
        segment();
      });
    } else {
      progress_.begin("segmentation", chunk_count_);
      segment();
      progress_.end();
      progress_.begin("embedding", chunk_count_);
    }
    // Should embedding fail, the segmentation thread must not wait forever on a full queue.
    struct CancelOnExit {
      BoundedQueue<SegmentedBatch>& queue;
      ~CancelOnExit() { queue.cancel(); }
    } cancel_on_exit{queue_};
    for (;;) {
      TraceSpan waiting("waiting for segmentation", kTraceWait);
      std::optional<SegmentedBatch> batch = queue_.pop();
      waiting.finish();
      if (batch) {
        const TraceSpan keeping("keeping segmentation classes");
        keep_classes(*batch);
      }
      embed_ready_ranges();
      if (!batch) break;
    }
    progress_.end();
    if (segmentation_thread.joinable()) segmentation_thread.join();
    // The tail where only embedding runs, and the networks are half idle (SPDLOG_LEVEL=debug).
    spdlog::debug(
        "{} recording(s), {} chunks: segmentation handed on its last batch {:.3f} s after "
        "it started, embedding ended {:.3f} s after it",
        recordings_.size(), chunk_count_, chunks_.seconds(), seconds_since(start_));
    share_segmentation_time();
    return std::move(intermediates_);
  }

 private:
  void segment() { chunks_.segment(segmentation_, chunk_count_, settings_.segmentation_rows); }

  // Keeps a segmentation call's chunks as one powerset class a frame, in their recordings.
  void keep_classes(const SegmentedBatch& batch) {
    const std::vector<std::uint8_t> classes = powerset_.decode(batch.log_probabilities);
    const std::size_t rows = batch.log_probabilities.dim(0);
    const std::size_t frames = batch.log_probabilities.dim(1);
    for (std::size_t row = 0; row < rows; ++row) {
      const std::size_t chunk = batch.first_chunk + row;
      const std::size_t r = recording_of(recordings_, chunk);
      Recording& recording = recordings_[r];
      if (recording.powerset_classes.empty()) {
        recording.frames = frames;
        recording.powerset_classes.resize(recording.chunk_count * frames);
        intermediates_[r].embeddings =
            NdArray<float>({recording.chunk_count, speakers_, settings_.embedding_dimension});
      }
      std::copy_n(classes.data() + row * frames, frames,
                  recording.powerset_classes.data() + (chunk - recording.first_chunk) * frames);
    }
    segmented_ = batch.first_chunk + rows;
    if (settings_.streaming) report_progress();
  }

  // Embeds whole ranges of the current recording as they become available, its last (short)
  // range only once all its chunks are segmented, then moves on to the next recording.
  void embed_ready_ranges() {
    while (current_ < recordings_.size()) {
      const Recording& recording = recordings_[current_];
      const std::size_t available =
          std::min(segmented_ - std::min(segmented_, recording.first_chunk), recording.chunk_count);
      const std::size_t waiting = available - recording.embedded;
      const bool complete = available == recording.chunk_count;
      if (waiting == 0 && complete) {
        finish_recording(current_);
        ++current_;
        continue;
      }
      if (waiting < embedding_batch_ && !(complete && waiting > 0)) break;
      embed_range(current_, std::min(embedding_batch_, waiting));
    }
  }

  // The next `count` chunks of recording `r`.
  void embed_range(std::size_t r, std::size_t count) {
    Recording& recording = recordings_[r];
    if (needed_) {
      // The shared trunk reads ahead of its chunks (blocks, margins, a recording-wide mean):
      // it starts once the whole recording is there.
      needed_(r, settings_.embedding_reads_whole_recording
                     ? recording.samples.size()
                     : chunk_end(recording.plan,
                                 static_cast<std::int64_t>(recording.embedded + count - 1)));
    }
    const auto embedding_start = Clock::now();
    TraceSpan span("embedding");
    if (span) {
      // The lane names the group's recordings in the order fed (corpus/corpus_engine.cpp).
      const std::vector<std::string>* names = current_trace_lane().recordings;
      if (names != nullptr && r < names->size()) span.args().recordings = {(*names)[r]};
      span.args()
          .number("first_chunk", static_cast<double>(recording.embedded))
          .number("chunks", static_cast<double>(count));
    }
    const NdArray<float> embedded_range =
        embed_(recording.samples, recording.plan, recording.embedded,
               segmentations_of(recording, recording.embedded, count));
    std::copy(
        embedded_range.values().begin(), embedded_range.values().end(),
        intermediates_[r].embeddings.data() + recording.embedded * embedded_range.size() / count);
    span.finish();
    times_[r].add("embedding", seconds_since(embedding_start));
    recording.embedded += count;
    release_passed_samples(r);
    embedded_total_ += count;
    report_progress();
  }

  // Tells `passed` which of recording `r`'s samples no later range reads.
  void release_passed_samples(std::size_t r) const {
    if (!passed_) return;
    // The shared trunk's blocks (two minutes) and margins reach back before the next chunk.
    constexpr std::int64_t kReachBackSamples = 180 * kSampleRate;
    const Recording& recording = recordings_[r];
    const std::int64_t next_start =
        static_cast<std::int64_t>(recording.embedded) * recording.plan.step_samples;
    if (next_start > kReachBackSamples) {
      passed_(r, static_cast<std::size_t>(next_start - kReachBackSamples));
    }
  }

  // Every chunk of recording `r` segmented and embedded: its segmentations become floats.
  void finish_recording(std::size_t r) {
    Recording& recording = recordings_[r];
    if (recording.chunk_count == 0) return;
    intermediates_[r].segmentations = segmentations_of(recording, 0, recording.chunk_count);
    recording.powerset_classes = {};
  }

  // Chunks [first, first + count) of a recording as binarized segmentations [count, frames,
  // speakers].
  NdArray<float> segmentations_of(const Recording& recording, std::size_t first,
                                  std::size_t count) const {
    NdArray<float> segmentations({count, recording.frames, speakers_});
    powerset_.write_multilabel(std::span(recording.powerset_classes)
                                   .subspan(first * recording.frames, count * recording.frames),
                               segmentations.values());
    return segmentations;
  }

  // Reported from the embedding side only, so the counts reach the sink in order.
  void report_progress() {
    progress_.update(settings_.streaming ? segmented_ + embedded_total_ : embedded_total_);
  }

  // Segmentation ran over every recording at once: each gets its share by chunks. With
  // streaming the stages overlap: each is its own working time, and their sum can exceed the
  // wall time of both together.
  void share_segmentation_time() {
    for (std::size_t r = 0; r < recordings_.size(); ++r) {
      const double share = chunk_count_ > 0 ? static_cast<double>(recordings_[r].chunk_count) /
                                                  static_cast<double>(chunk_count_)
                                            : 0.0;
      StageTimes ordered;
      ordered.add("segmentation", chunks_.seconds() * share);
      for (const auto& [stage, seconds] : times_[r].entries()) ordered.add(stage, seconds);
      ordered.add("embedding", 0.0);
      times_[r] = ordered;
    }
  }

  using Clock = std::chrono::steady_clock;
  const Clock::time_point start_ = Clock::now();
  stages::SegmentationModel& segmentation_;
  const EmbedChunkRange& embed_;
  const SegmentEmbedSettings& settings_;
  std::vector<Recording> recordings_;
  const std::size_t chunk_count_;  // of every recording
  std::vector<StageTimes>& times_;
  ProgressSink& progress_;
  const SamplesPassed& passed_;
  const SamplesNeeded& needed_;
  const std::size_t embedding_batch_;
  const frames::Powerset powerset_{3, 2};
  const std::size_t speakers_ = static_cast<std::size_t>(powerset_.num_classes());
  std::vector<DiarizationIntermediates> intermediates_;
  BoundedQueue<SegmentedBatch> queue_;
  ChunkStream chunks_;
  std::size_t segmented_ = 0;       // chunks of the stream segmented so far
  std::size_t embedded_total_ = 0;  // for progress
  std::size_t current_ = 0;         // the recording being embedded
};

SegmentEmbedScheduler::SegmentEmbedScheduler(stages::SegmentationModel& segmentation,
                                             EmbedChunkRange embed, SegmentEmbedSettings settings)
    : segmentation_(segmentation), embed_(std::move(embed)), settings_(settings) {}

SegmentEmbedScheduler::~SegmentEmbedScheduler() = default;

std::size_t SegmentEmbedScheduler::add(std::span<const float> samples) {
  Recording recording;
  recording.samples = samples;
  recording.plan = frames::plan_chunks(static_cast<std::int64_t>(samples.size()), kSampleRate,
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
  // Whatever happens, the scheduler is empty for the next feed.
  std::vector<Recording> recordings = std::exchange(recordings_, {});
  const std::size_t chunk_count = std::exchange(chunk_count_, 0);
  return Run(*this, std::move(recordings), chunk_count, times, progress, passed, needed).execute();
}

}  // namespace parley::pipeline
