#pragma once
// A trace of where a run's time goes, thread by thread, as a Chrome trace-event file (the
// "traceEvents" JSON that Perfetto and chrome://tracing open; tools/trace_summary.py sums it).
//
// A TraceRecorder holds the events of one run. A thread records only while a TraceLane is bound to
// it (TraceLaneBinding): which recorder, which process (pid: the corpus's shared stages, or one
// engine) and which track (tid: a decoder, an engine's networks, one of its segmentation workers).
// Code deep in the pipeline opens a TraceSpan without knowing whether anyone traces: with no lane
// bound (every run that does not trace) a TraceSpan reads one thread-local pointer and does nothing
// else, no clock, no allocation, no lock. With one, it reads the clock twice and appends one event
// under a short lock; the file is written once, at the end (TraceRecorder::write).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace parley {

using Clock = std::chrono::steady_clock;

// What an event is about: Chrome's "args", shown when the event is selected.
struct TraceArgs {
  // The recordings it is about (several for model calls shared by a group); empty: those of the
  // thread's lane, if any.
  std::vector<std::string> recordings;
  // Named numbers (chunks, batch, engine, ...).
  std::vector<std::pair<std::string, double>> numbers;
  // Named texts (a model's input shape, ...).
  std::vector<std::pair<std::string, std::string>> texts;

  TraceArgs& number(std::string name, double value) {
    numbers.emplace_back(std::move(name), value);
    return *this;
  }
  TraceArgs& text(std::string name, std::string value) {
    texts.emplace_back(std::move(name), std::move(value));
    return *this;
  }
};

// Event categories ("cat"): what tools/trace_summary.py tells apart.
inline constexpr std::string_view kTraceModel = "model";  // a model's run (the device's work)
inline constexpr std::string_view kTraceStage = "stage";  // host work of a stage
inline constexpr std::string_view kTraceWait = "wait";    // a thread waiting for another stage

class TraceRecorder {
 public:
  TraceRecorder();  // times are counted from here
  TraceRecorder(const TraceRecorder&) = delete;
  TraceRecorder& operator=(const TraceRecorder&) = delete;

  // A complete event ("ph":"X") from `start` to `end` on track `tid` of process `pid`.
  void complete(std::string_view name, std::string_view category, std::uint32_t pid,
                std::uint32_t tid, Clock::time_point start, Clock::time_point end,
                TraceArgs args = {});
  // An asynchronous span ("ph":"b" and "e", matched by `id`): a wait that belongs to no thread,
  // such as a recording's in a queue, shown on tracks of its own.
  void span(std::string_view name, std::string_view category, std::uint32_t pid, std::uint64_t id,
            Clock::time_point start, Clock::time_point end, TraceArgs args = {});
  // A counter's value from `at` on ("ph":"C"), drawn as a graph.
  void counter(std::string_view name, std::uint32_t pid, Clock::time_point at, double value);
  // Names shown for a process and for one of its tracks ("ph":"M"); `labels` are the process's
  // (its device). Naming again changes nothing.
  void name_process(std::uint32_t pid, const std::string& name, const std::string& labels = {});
  void name_thread(std::uint32_t pid, std::uint32_t tid, const std::string& name);

  std::size_t event_count() const;
  // The trace as Chrome's JSON object format: {"traceEvents": [...], "displayTimeUnit": "ms",
  // "otherData": {...}}; times in microseconds since the recorder was made.
  nlohmann::json to_json() const;
  // Writes to_json() to `path` atomically (core/atomic_file.h).
  void write(const std::filesystem::path& path) const;

 private:
  struct Event {
    char phase = 'X';
    std::string name;
    std::string category;
    std::uint32_t pid = 0;
    std::uint32_t tid = 0;
    std::uint64_t id = 0;
    std::int64_t start_ns = 0;
    std::int64_t duration_ns = 0;
    double value = 0.0;
    TraceArgs args;
  };
  std::int64_t since_origin(Clock::time_point at) const;
  // An event of `phase` from `start` to `end` (never of negative length): what complete() and
  // span() record, before the thread or id that tells them apart.
  Event timed(char phase, std::string_view name, std::string_view category, std::uint32_t pid,
              Clock::time_point start, Clock::time_point end, TraceArgs args) const;
  void append(Event event);

  const Clock::time_point origin_;
  mutable std::mutex mutex_;
  std::deque<Event> events_;  // a deque: appending never moves what is there
  std::set<std::pair<std::uint32_t, std::uint32_t>> named_threads_;
  std::set<std::uint32_t> named_processes_;
  std::vector<nlohmann::json> metadata_;
};

// Where the calling thread's events go; no recorder: nowhere.
struct TraceLane {
  TraceRecorder* recorder = nullptr;
  std::uint32_t pid = 0;
  std::uint32_t tid = 0;
  // The recordings the thread works on now, owned by whoever bound the lane (which outlives
  // every binding nested in it); events name them unless they name their own.
  const std::vector<std::string>* recordings = nullptr;

  explicit operator bool() const { return recorder != nullptr; }
  TraceLane on_track(std::uint32_t track) const {
    TraceLane lane = *this;
    lane.tid = track;
    return lane;
  }
};

// The calling thread's lane (empty when nothing is bound).
const TraceLane& current_trace_lane();

// Binds `lane` to the calling thread for its lifetime (the previous binding comes back after),
// naming its track `track_name` when given. An empty lane unbinds: an empty binding costs nothing.
class TraceLaneBinding {
 public:
  explicit TraceLaneBinding(const TraceLane& lane, std::string_view track_name = {});
  ~TraceLaneBinding();
  TraceLaneBinding(const TraceLaneBinding&) = delete;
  TraceLaneBinding& operator=(const TraceLaneBinding&) = delete;

 private:
  TraceLane previous_;
};

// A complete event on the calling thread's lane from construction to destruction (or finish());
// nothing at all when no lane is bound. `name` and `category` must outlive it (literals).
class TraceSpan {
 public:
  explicit TraceSpan(std::string_view name, std::string_view category = kTraceStage);
  ~TraceSpan() { finish(); }
  TraceSpan(const TraceSpan&) = delete;
  TraceSpan& operator=(const TraceSpan&) = delete;

  explicit operator bool() const { return lane_.recorder != nullptr; }
  // What the event is about; fill it only when the span records (`if (span)`).
  TraceArgs& args() { return args_; }
  // Ends the event now (once).
  void finish();

 private:
  TraceLane lane_;
  std::string_view name_;
  std::string_view category_;
  Clock::time_point start_{};
  TraceArgs args_;
};

// Tracks (Chrome's tids) inside a process, fixed so that every engine looks alike in a viewer.
// The corpus's process (pid kTraceCorpusProcess): decoders, then clustering threads.
inline constexpr std::uint32_t kTraceCorpusProcess = 0;
inline constexpr std::uint32_t kTraceDecoderTrack = 1;        // + the decoder's number
inline constexpr std::uint32_t kTraceClusteringTrack = 1001;  // + the clustering thread's number
// An engine's process (pid 1 + its index): its thread, the thread that feeds segmentation, the
// segmentation workers.
inline constexpr std::uint32_t kTraceNetworksTrack = 1;
inline constexpr std::uint32_t kTraceSegmentationTrack = 2;
inline constexpr std::uint32_t kTraceSegmentationWorkerTrack = 10;  // + the worker's number

}  // namespace parley
