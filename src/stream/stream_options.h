#pragma once
// The live stream's options, each written once as pipeline/option_table.h writes the batch ones:
// name, type, default (StreamConfig's own), bounds or choices, help, and the faces that offer it:
// `parley stream`'s flags, the query parameters of `parley serve`'s WebSocket (GET /v1/stream),
// parley_stream_params and the push calls' channels (C), parley.Stream's keywords (Python).
// StreamConfig::validate checks against these bounds, so every face refuses the same values with
// the same message ("latency: must be 0.5 to 5 (got 9)"), and `parley options --stream` lists
// them.
#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "pipeline/option_table.h"
#include "stream/stream_diarizer.h"

namespace parley::stream {

// Interleaved channels a stream's pushed samples may have (the option "channels"), averaged to
// mono as they arrive.
inline constexpr int kMaxStreamChannels = 64;

std::span<const pipeline::OptionSpec> stream_options();
// The option named `name` or one of its aliases ("rate" is sample_rate); fails naming the options
// when there is none.
const pipeline::OptionSpec& stream_option(std::string_view name);

// A stream option's name as a query parameter of `parley serve`'s WebSocket: "rate" for
// sample_rate (its alias), every other one its name.
std::string_view query_parameter_name(const pipeline::OptionSpec& spec);

// `values` (a JSON object by option name or alias, typed as OptionSpec::parse makes them) set
// into `config`, each checked against its option, then config.validate(). "channels" is no field
// of StreamConfig (samples carry it): checked, and left to the caller. Fails naming the option.
void apply_stream_options(const nlohmann::json& values, StreamConfig& config);

// The table as a JSON array, in parley_options_json's layout (`parley options --stream --json`).
std::string stream_options_json();

}  // namespace parley::stream
