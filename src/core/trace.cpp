#include "core/trace.h"

#include <fmt/format.h>

#include "core/atomic_file.h"
#include "core/text.h"

namespace parley {
namespace {

thread_local TraceLane bound_lane;

// Nanoseconds as Chrome's microseconds, to the nanosecond.
double micros(std::int64_t nanoseconds) { return static_cast<double>(nanoseconds) / 1000.0; }

nlohmann::json args_json(const std::vector<std::string>& recordings,
                         const std::vector<std::pair<std::string, double>>& numbers,
                         const std::vector<std::pair<std::string, std::string>>& texts) {
  nlohmann::json args = nlohmann::json::object();
  if (recordings.size() == 1) {
    args["recording"] = utf8_or_escaped(recordings.front());
  } else if (!recordings.empty()) {
    nlohmann::json names = nlohmann::json::array();
    for (const std::string& name : recordings) names.push_back(utf8_or_escaped(name));
    args["recordings"] = std::move(names);
  }
  for (const auto& [name, value] : numbers) args[name] = value;
  for (const auto& [name, value] : texts) args[name] = utf8_or_escaped(value);
  return args;
}

}  // namespace

TraceRecorder::TraceRecorder() : origin_(Clock::now()) {}

std::int64_t TraceRecorder::since_origin(Clock::time_point at) const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(at - origin_).count();
}

void TraceRecorder::append(Event event) {
  const std::lock_guard lock(mutex_);
  events_.push_back(std::move(event));
}

TraceRecorder::Event TraceRecorder::timed(char phase, std::string_view name,
                                          std::string_view category, std::uint32_t pid,
                                          Clock::time_point start, Clock::time_point end,
                                          TraceArgs args) const {
  Event event;
  event.phase = phase;
  event.name = name;
  event.category = category;
  event.pid = pid;
  event.start_ns = since_origin(start);
  event.duration_ns = std::max<std::int64_t>(0, since_origin(end) - event.start_ns);
  event.args = std::move(args);
  return event;
}

void TraceRecorder::complete(std::string_view name, std::string_view category, std::uint32_t pid,
                             std::uint32_t tid, Clock::time_point start, Clock::time_point end,
                             TraceArgs args) {
  Event event = timed('X', name, category, pid, start, end, std::move(args));
  event.tid = tid;
  append(std::move(event));
}

void TraceRecorder::span(std::string_view name, std::string_view category, std::uint32_t pid,
                         std::uint64_t id, Clock::time_point start, Clock::time_point end,
                         TraceArgs args) {
  Event event = timed('b', name, category, pid, start, end, std::move(args));
  event.id = id;
  append(std::move(event));
}

void TraceRecorder::counter(std::string_view name, std::uint32_t pid, Clock::time_point at,
                            double value) {
  Event event;
  event.phase = 'C';
  event.name = name;
  event.pid = pid;
  event.start_ns = since_origin(at);
  event.value = value;
  append(std::move(event));
}

void TraceRecorder::name_process(std::uint32_t pid, const std::string& name,
                                 const std::string& labels) {
  const std::lock_guard lock(mutex_);
  if (!named_processes_.insert(pid).second) return;
  metadata_.push_back({{"ph", "M"},
                       {"name", "process_name"},
                       {"pid", pid},
                       {"tid", 0},
                       {"args", {{"name", utf8_or_escaped(name)}}}});
  metadata_.push_back({{"ph", "M"},
                       {"name", "process_sort_index"},
                       {"pid", pid},
                       {"tid", 0},
                       {"args", {{"sort_index", pid}}}});
  if (!labels.empty()) {
    metadata_.push_back({{"ph", "M"},
                         {"name", "process_labels"},
                         {"pid", pid},
                         {"tid", 0},
                         {"args", {{"labels", utf8_or_escaped(labels)}}}});
  }
}

void TraceRecorder::name_thread(std::uint32_t pid, std::uint32_t tid, const std::string& name) {
  const std::lock_guard lock(mutex_);
  if (!named_threads_.insert({pid, tid}).second) return;
  metadata_.push_back({{"ph", "M"},
                       {"name", "thread_name"},
                       {"pid", pid},
                       {"tid", tid},
                       {"args", {{"name", utf8_or_escaped(name)}}}});
  metadata_.push_back({{"ph", "M"},
                       {"name", "thread_sort_index"},
                       {"pid", pid},
                       {"tid", tid},
                       {"args", {{"sort_index", tid}}}});
}

std::size_t TraceRecorder::event_count() const {
  const std::lock_guard lock(mutex_);
  return events_.size();
}

nlohmann::json TraceRecorder::to_json() const {
  const std::lock_guard lock(mutex_);
  nlohmann::json events = nlohmann::json::array();
  for (const nlohmann::json& metadata : metadata_) events.push_back(metadata);
  for (const Event& event : events_) {
    nlohmann::json json = {{"name", event.name},
                           {"ph", std::string(1, event.phase)},
                           {"ts", micros(event.start_ns)},
                           {"pid", event.pid}};
    switch (event.phase) {
      case 'X':
        json["cat"] = event.category;
        json["tid"] = event.tid;
        json["dur"] = micros(event.duration_ns);
        json["args"] = args_json(event.args.recordings, event.args.numbers, event.args.texts);
        events.push_back(std::move(json));
        break;
      case 'b': {
        // Chrome's asynchronous events: a begin and an end matched by category, name and id.
        json["cat"] = event.category;
        json["tid"] = 0;
        json["id"] = fmt::format("0x{:x}", event.id);
        json["args"] = args_json(event.args.recordings, event.args.numbers, event.args.texts);
        nlohmann::json end = json;
        end["ph"] = "e";
        end["ts"] = micros(event.start_ns + event.duration_ns);
        end["args"] = nlohmann::json::object();
        events.push_back(std::move(json));
        events.push_back(std::move(end));
        break;
      }
      default:  // 'C'
        json["tid"] = 0;
        json["args"] = {{"value", event.value}};
        events.push_back(std::move(json));
        break;
    }
  }
  return {
      {"traceEvents", std::move(events)},
      {"displayTimeUnit", "ms"},
      {"otherData", {{"producer", "parley"}, {"time_unit", "microseconds since the run began"}}}};
}

void TraceRecorder::write(const std::filesystem::path& path) const {
  write_file_atomically(path,
                        to_json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

const TraceLane& current_trace_lane() { return bound_lane; }

TraceLaneBinding::TraceLaneBinding(const TraceLane& lane, std::string_view track_name)
    : previous_(bound_lane) {
  bound_lane = lane;
  if (lane && !track_name.empty())
    lane.recorder->name_thread(lane.pid, lane.tid, std::string(track_name));
}

TraceLaneBinding::~TraceLaneBinding() { bound_lane = previous_; }

TraceSpan::TraceSpan(std::string_view name, std::string_view category) : lane_(bound_lane) {
  if (!lane_) return;
  name_ = name;
  category_ = category;
  start_ = Clock::now();
}

void TraceSpan::finish() {
  if (!lane_) return;
  const Clock::time_point end = Clock::now();
  if (args_.recordings.empty() && lane_.recordings != nullptr) args_.recordings = *lane_.recordings;
  lane_.recorder->complete(name_, category_, lane_.pid, lane_.tid, start_, end, std::move(args_));
  lane_.recorder = nullptr;
}

}  // namespace parley
