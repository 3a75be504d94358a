// parley_stream_*: live diarization through the C API (stream/stream_diarizer.h, docs/live.md).
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "api/handles.h"
#include "parley/parley.h"
#include "stream/stream_diarizer.h"
#include "stream/stream_options.h"

static_assert(PARLEY_MAX_STREAM_CHANNELS == parley::stream::kMaxStreamChannels,
              "parley.h's channel bound is the stream table's");

struct parley_stream {
  parley_diarizer* diarizer = nullptr;
  std::unique_ptr<parley::stream::StreamDiarizer> stream;
};

namespace {

using parley::api::invalid_argument;
using parley::stream::StreamEvent;

template <typename Handle>
void require(const Handle* handle, const char* function, const char* name) {
  if (handle == nullptr) invalid_argument(fmt::format("{}: {} must not be NULL", function, name));
}

parley_stream_event to_c(const StreamEvent& event) {
  parley_stream_event out{};
  switch (event.kind) {
    case StreamEvent::Kind::kTurnStart:
      out.kind = PARLEY_STREAM_TURN_START;
      break;
    case StreamEvent::Kind::kTurnUpdate:
      out.kind = PARLEY_STREAM_TURN_UPDATE;
      break;
    case StreamEvent::Kind::kTurnEnd:
      out.kind = PARLEY_STREAM_TURN_END;
      break;
  }
  // "SPEAKER_07" -> 7; a provisional update of a voice not named yet: -1.
  out.speaker =
      event.speaker.empty() ? -1 : std::stoi(event.speaker.substr(event.speaker.find('_') + 1));
  out.start = event.start;
  out.end = event.end;
  out.audio_time = event.audio_time;
  out.latency = event.latency_seconds;
  return out;
}

// The library's messages name StreamConfig's fields; parley_stream_params calls two of them
// otherwise (the rest have the same names).
std::string with_c_field_names(std::string message) {
  for (const auto& [field, c_field] : {std::pair{std::string_view("step_seconds"), "step"},
                                       std::pair{std::string_view("latency_seconds"), "latency"}}) {
    for (std::size_t at = message.find(field); at != std::string::npos;
         at = message.find(field, at)) {
      message.replace(at, field.size(), c_field);
    }
  }
  return message;
}

// A stream option's check (stream/stream_options.h), its message under the C name.
template <typename Value>
void check_option(const char* name, const Value& value, const char* function) {
  try {
    parley::stream::stream_option(name).check_value(value);
  } catch (const parley::Error& error) {
    invalid_argument(fmt::format("{}: {}", function, with_c_field_names(error.what())));
  }
}

void check_push(const parley_stream* stream, const void* samples, std::size_t frames, int channels,
                const char* function) {
  require(stream, function, "stream");
  if (frames > 0) require(samples, function, "samples");
  check_option("channels", channels, function);
}

}  // namespace

extern "C" {

parley_stream_params parley_default_stream_params(void) {
  const parley::stream::StreamConfig defaults;
  parley_stream_params params{};
  params.sample_rate = defaults.sample_rate;
  params.step = defaults.step_seconds;
  params.latency = defaults.latency_seconds;
  params.max_speakers = static_cast<int>(defaults.max_speakers);
  params.match_threshold = defaults.match_threshold;
  params.provisional = defaults.provisional ? 1 : 0;
  params.final_recluster = defaults.final_recluster ? 1 : 0;
  return params;
}

parley_status parley_stream_new(parley_diarizer* diarizer, const parley_stream_params* params,
                                parley_stream** stream) {
  return parley::api::run_guarded([&] {
    require(stream, "parley_stream_new", "stream");
    *stream = nullptr;
    require(diarizer, "parley_stream_new", "diarizer");
    const parley_stream_params given = params ? *params : parley_default_stream_params();
    // The fields by their options' names, checked by the stream's table as every face's.
    const nlohmann::json values = {{"sample_rate", given.sample_rate},
                                   {"step", given.step},
                                   {"latency", given.latency},
                                   {"max_speakers", given.max_speakers},
                                   {"match_threshold", given.match_threshold},
                                   {"provisional", given.provisional != 0},
                                   {"final_recluster", given.final_recluster != 0}};
    parley::stream::StreamConfig config;
    try {
      parley::stream::apply_stream_options(values, config);
    } catch (const parley::Error& error) {
      invalid_argument(fmt::format("parley_stream_new: {}", with_c_field_names(error.what())));
    }
    auto handle = std::make_unique<parley_stream>();
    handle->diarizer = diarizer;
    handle->stream = std::make_unique<parley::stream::StreamDiarizer>(
        parley::api::stream_models_of(*diarizer), config);
    *stream = handle.release();
  });
}

parley_status parley_stream_push(parley_stream* stream, const float* samples, size_t frame_count,
                                 int channels) {
  return parley::api::run_guarded([&] {
    check_push(stream, samples, frame_count, channels, "parley_stream_push");
    if (frame_count == 0) return;
    stream->stream->push_interleaved(
        std::span<const float>(samples, frame_count * static_cast<std::size_t>(channels)),
        channels);
  });
}

parley_status parley_stream_push_s16(parley_stream* stream, const int16_t* samples,
                                     size_t frame_count, int channels) {
  return parley::api::run_guarded([&] {
    check_push(stream, samples, frame_count, channels, "parley_stream_push_s16");
    if (frame_count == 0) return;
    stream->stream->push_int16(
        std::span<const std::int16_t>(samples, frame_count * static_cast<std::size_t>(channels)),
        channels);
  });
}

parley_status parley_stream_poll(parley_stream* stream, parley_stream_event* events,
                                 size_t capacity, size_t* count) {
  return parley::api::run_guarded([&] {
    require(count, "parley_stream_poll", "count");
    *count = 0;
    require(stream, "parley_stream_poll", "stream");
    if (capacity > 0) require(events, "parley_stream_poll", "events");
    std::vector<StreamEvent> waiting = stream->stream->take_events();
    const std::size_t n = std::min(capacity, waiting.size());
    for (std::size_t i = 0; i < n; ++i) events[i] = to_c(waiting[i]);
    *count = n;
    // The rest wait for the next poll: put them back in order.
    if (n < waiting.size()) {
      stream->stream->return_events(std::vector<StreamEvent>(
          waiting.begin() + static_cast<std::ptrdiff_t>(n), waiting.end()));
    }
  });
}

parley_status parley_stream_set_callback(parley_stream* stream, parley_stream_callback callback,
                                         void* user_data) {
  return parley::api::run_guarded([&] {
    require(stream, "parley_stream_set_callback", "stream");
    if (callback == nullptr) {
      stream->stream->set_event_callback({});
      return;
    }
    stream->stream->set_event_callback([callback, user_data](const StreamEvent& event) {
      const parley_stream_event c = to_c(event);
      callback(&c, user_data);
    });
  });
}

parley_status parley_stream_finish(parley_stream* stream, parley_result** result) {
  return parley::api::run_guarded([&] {
    require(result, "parley_stream_finish", "result");
    *result = nullptr;
    require(stream, "parley_stream_finish", "stream");
    *result = parley::api::new_result(stream->stream->finish("stream"), *stream->diarizer);
  });
}

void parley_stream_free(parley_stream* stream) { delete stream; }

}  // extern "C"
