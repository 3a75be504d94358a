#include "server/stream_diarizer_session.h"

#include <array>
#include <cctype>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "pipeline/option_table.h"
#include "pipeline/result_writer.h"
#include "stream/pcm_input.h"
#include "stream/stream_options.h"

namespace parley::server {
namespace {

// StreamConfig's messages name its fields; a WebSocket client knows the query parameters, which
// are named otherwise (as the CLI shows its flags instead: cli/flag_names.h).
std::string with_parameter_names(std::string message) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 3> kParameterOfField =
      {{{"step_seconds", "step"}, {"latency_seconds", "latency"}, {"sample_rate", "rate"}}};
  const auto identifier = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
  };
  for (const auto& [field, parameter] : kParameterOfField) {
    std::size_t at = message.find(field);
    while (at != std::string::npos) {
      const std::size_t end = at + field.size();
      const bool whole = (at == 0 || !identifier(message[at - 1])) &&
                         (end == message.size() || !identifier(message[end]));
      if (whole) message.replace(at, field.size(), parameter);
      at = message.find(field, at + (whole ? parameter.size() : field.size()));
    }
  }
  return message;
}

class DiarizerStream : public LiveStream {
 public:
  DiarizerStream(const stream::StreamModels& models, stream::StreamConfig config,
                 const LiveStreamRequest& request)
      : diarizer_(models, std::move(config)), request_(request) {}

  void push(std::string_view pcm, std::chrono::steady_clock::time_point arrival) override {
    stream::push_pcm(diarizer_,
                     std::span(reinterpret_cast<const unsigned char*>(pcm.data()), pcm.size()),
                     request_.format == PcmFormat::kS16le ? stream::PcmFormat::kS16le
                                                          : stream::PcmFormat::kF32le,
                     request_.channels, arrival);
  }

  std::vector<std::string> take_events() override {
    std::vector<std::string> texts;
    for (const stream::StreamEvent& event : diarizer_.take_events()) {
      texts.push_back(event.to_json());
    }
    return texts;
  }

  std::vector<std::string> finish() override {
    const pipeline::DiarizationResult result = diarizer_.finish("stream");
    std::vector<std::string> texts = take_events();
    const nlohmann::json message = {
        {"type", "result"},
        {"audio_seconds", diarizer_.audio_seconds()},
        {"rttm", pipeline::format_result(result, "rttm")},
        {"json", nlohmann::json::parse(pipeline::format_result(result, "json"))}};
    texts.push_back(message.dump());
    return texts;
  }

 private:
  stream::StreamDiarizer diarizer_;
  LiveStreamRequest request_;
};

}  // namespace

stream::StreamConfig stream_config(const LiveStreamRequest& request,
                                   const stream::StreamConfig& defaults) {
  stream::StreamConfig config = defaults;
  try {
    // Each setting read and checked by its row of the stream's option table, as every face's.
    nlohmann::json values = {{"sample_rate", request.sample_rate}};
    for (const auto& [name, text] : request.settings) {
      const pipeline::OptionSpec& spec = stream::stream_option(name);
      values[spec.name] = spec.parse(text);
    }
    stream::apply_stream_options(values, config);
  } catch (const Error& error) {
    throw Error(with_parameter_names(error.what()));
  }
  return config;
}

LiveStreamFactory stream_diarizer_factory(const stream::StreamModels& models,
                                          stream::StreamConfig defaults) {
  return [&models, defaults](const LiveStreamRequest& request) -> std::unique_ptr<LiveStream> {
    return std::make_unique<DiarizerStream>(models, stream_config(request, defaults), request);
  };
}

}  // namespace parley::server
