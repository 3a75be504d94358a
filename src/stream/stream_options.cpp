#include "stream/stream_options.h"

#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "audio/audio_source.h"
#include "core/error.h"

namespace parley::stream {
namespace {

using pipeline::OptionFaces;
using pipeline::OptionSpec;
using pipeline::OptionType;

// `parley stream`, the WebSocket, C and Python; parley.distributed runs no streams.
constexpr OptionFaces kStreamFaces{true, true, true, true, false};

OptionSpec option(std::string name, OptionType type, nlohmann::json default_value,
                  std::optional<double> minimum, std::optional<double> maximum, std::string help,
                  std::string cli_flag, std::string config_field = "") {
  OptionSpec spec;
  spec.name = std::move(name);
  spec.type = type;
  spec.default_value = std::move(default_value);
  spec.minimum = minimum;
  spec.maximum = maximum;
  spec.help = std::move(help);
  spec.faces = kStreamFaces;
  spec.target = pipeline::OptionTarget::kStream;
  spec.cli_flag = std::move(cli_flag);
  spec.config_field = std::move(config_field);
  return spec;
}

std::vector<OptionSpec> make_options() {
  const StreamConfig defaults;
  std::vector<OptionSpec> options;
  options.push_back(option("sample_rate", OptionType::kNumber, defaults.sample_rate,
                           audio::kMinSampleRate, audio::kMaxSampleRate,
                           "rate of the pushed samples (Hz), resampled to 16 kHz inside",
                           "--rate"));
  options.back().aliases = {"rate"};
  options.back().faces_note =
      "the WebSocket's query parameter is rate; `parley stream` takes --rate with --raw (a "
      "recording's header has its rate)";
  options.push_back(option("channels", OptionType::kInteger, 1, 1, kMaxStreamChannels,
                           "interleaved channels of the pushed samples, averaged to mono",
                           "--channels"));
  options.back().faces_note =
      "C: the channels argument of each parley_stream_push; `parley stream` takes --channels "
      "with --raw";
  options.push_back(option("step", OptionType::kNumber, defaults.step_seconds, 0.1, 5.0,
                           "seconds the rolling 10 s window moves between two model runs", "--step",
                           "step_seconds"));
  options.push_back(option("latency", OptionType::kNumber, defaults.latency_seconds, 0.5, 5.0,
                           "seconds of audio after which a frame's speaker is final (at least "
                           "step)",
                           "--latency", "latency_seconds"));
  options.push_back(option("max_speakers", OptionType::kInteger, defaults.max_speakers, 1, 1000,
                           "most speakers the stream creates; past it a new voice is given the "
                           "closest known speaker",
                           "--max-speakers"));
  options.push_back(option("match_threshold", OptionType::kNumber, defaults.match_threshold, 0.0,
                           2.0,
                           "cosine distance under which a voice matches a known speaker (lower: "
                           "more speakers)",
                           "--match-threshold"));
  options.push_back(
      option("provisional", OptionType::kFlag, defaults.provisional, std::nullopt, std::nullopt,
             "also report turn_update events for the frames not final yet", "--provisional"));
  options.push_back(option("final_recluster", OptionType::kFlag, defaults.final_recluster,
                           std::nullopt, std::nullopt,
                           "at the end, diarize the whole stream as the batch pipeline does and "
                           "return that under the live speaker names",
                           "--final-recluster"));
  options.push_back(option(
      "embedding", OptionType::kChoice, stream_embedding_name(defaults.embedding), std::nullopt,
      std::nullopt,
      "how windows are embedded: rolling keeps the embedding trunk's frames between steps, window "
      "runs it on every whole window, auto is rolling where the models allow it (docs/live.md)",
      "--stream-embedding"));
  options.back().choices = {"auto", "window", "rolling"};
  options.back().faces.c = false;
  options.back().faces.python = false;
  options.back().faces_note = "C and Python: auto";
  return options;
}

}  // namespace

std::span<const OptionSpec> stream_options() {
  static const std::vector<OptionSpec> options = make_options();
  return options;
}

const OptionSpec& stream_option(std::string_view name) {
  for (const OptionSpec& spec : stream_options()) {
    if (spec.name == name) return spec;
    for (const std::string& alias : spec.aliases) {
      if (alias == name) return spec;
    }
  }
  std::vector<std::string_view> names;
  for (const OptionSpec& spec : stream_options()) names.emplace_back(spec.name);
  fail("unknown stream option '{}' ({})", name, fmt::join(names, ", "));
}

std::string_view query_parameter_name(const OptionSpec& spec) {
  return spec.name == "sample_rate" ? std::string_view("rate") : std::string_view(spec.name);
}

void apply_stream_options(const nlohmann::json& values, StreamConfig& config) {
  for (const auto& [name, value] : values.items()) {
    const OptionSpec& spec = stream_option(name);
    spec.check_value(value);
    if (value.is_null()) continue;
    if (spec.name == "sample_rate") {
      config.sample_rate = value.get<double>();
    } else if (spec.name == "step") {
      config.step_seconds = value.get<double>();
    } else if (spec.name == "latency") {
      config.latency_seconds = value.get<double>();
    } else if (spec.name == "max_speakers") {
      config.max_speakers = value.get<std::size_t>();
    } else if (spec.name == "match_threshold") {
      config.match_threshold = value.get<double>();
    } else if (spec.name == "provisional") {
      config.provisional = value.get<bool>();
    } else if (spec.name == "final_recluster") {
      config.final_recluster = value.get<bool>();
    } else if (spec.name == "embedding") {
      config.embedding = parse_stream_embedding(value.get<std::string>());
    }
  }
  config.validate();
}

std::string stream_options_json() {
  nlohmann::json list = nlohmann::json::array();
  for (const OptionSpec& spec : stream_options()) list.push_back(spec.to_json());
  return list.dump(2) + "\n";
}

}  // namespace parley::stream
