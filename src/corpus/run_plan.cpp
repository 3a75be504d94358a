#include "corpus/run_plan.h"

#include <algorithm>

#include <fmt/format.h>

#include "audio/audio_source.h"
#include "core/error.h"
#include "core/sample_rate.h"
#include "core/temporary_directory.h"
#include "core/text.h"
#include "pipeline/network_placement.h"

namespace parley::corpus {
namespace fs = std::filesystem;
namespace {

void append_quoted(std::string& out, std::string_view text) {
  out += '"';
  for (std::size_t index = 0; index < text.size();) {
    const std::size_t length = utf8_sequence_length(text, index);
    const auto byte = static_cast<unsigned char>(text[index]);
    if (length == 0) {
      out += fmt::format("\\udc{:02x}", byte);
      ++index;
      continue;
    }
    // Escaped as nlohmann::json escapes them, so that valid text comes out as its dump does.
    static constexpr std::string_view kShort = "\b\t\n\f\r";
    static constexpr std::string_view kLetters = "btnfr";
    if (length == 1 && (byte == '"' || byte == '\\')) {
      out += '\\';
      out += static_cast<char>(byte);
    } else if (const auto known = kShort.find(static_cast<char>(byte));
               length == 1 && known != std::string_view::npos) {
      out += '\\';
      out += kLetters[known];
    } else if (length == 1 && byte < 0x20) {
      out += fmt::format("\\u{:04x}", byte);
    } else {
      out.append(text.substr(index, length));
    }
    index += length;
  }
  out += '"';
}

void append_json(std::string& out, const nlohmann::ordered_json& value) {
  if (value.is_string()) {
    append_quoted(out, value.get_ref<const std::string&>());
  } else if (value.is_object()) {
    out += '{';
    bool first = true;
    for (auto item = value.begin(); item != value.end(); ++item) {
      if (!first) out += ',';
      first = false;
      append_quoted(out, item.key());
      out += ':';
      append_json(out, item.value());
    }
    out += '}';
  } else if (value.is_array()) {
    out += '[';
    bool first = true;
    for (const auto& item : value) {
      if (!first) out += ',';
      first = false;
      append_json(out, item);
    }
    out += ']';
  } else {
    out += value.dump();  // numbers, booleans and null hold no text
  }
}

}  // namespace

double PlannedRun::Recording::audio_seconds() const {
  return finished() ? outputs.formats.front().audio_seconds : 0.0;
}

std::size_t PlannedRun::finished_count() const {
  return static_cast<std::size_t>(
      std::count_if(recordings.begin(), recordings.end(),
                    [](const Recording& recording) { return recording.finished(); }));
}

double PlannedRun::longest_seconds() const {
  double longest = 0.0;
  for (const Recording& recording : recordings) {
    longest = std::max(longest, recording.duration_seconds);
  }
  return longest;
}

nlohmann::ordered_json PlannedRun::describe() const {
  nlohmann::ordered_json document = {{"recordings", nlohmann::ordered_json::array()},
                                     {"repeats", nlohmann::ordered_json::array()}};
  for (const Recording& recording : recordings) {
    nlohmann::ordered_json outputs = nlohmann::ordered_json::array();
    for (const PlannedRecording& one : recording.outputs.formats) {
      outputs.push_back({{"format", one.settings.value("format", std::string())},
                         {"output", one.destination.output.string()},
                         {"record", one.destination.record.string()},
                         {"finished", one.finished}});
    }
    document["recordings"].push_back({{"index", recording.index},
                                      {"audio", recording.audio.string()},
                                      {"name", recording.name},
                                      {"finished", recording.finished()},
                                      {"audio_seconds", recording.audio_seconds()},
                                      {"outputs", std::move(outputs)}});
  }
  for (const RepeatedRecording& repeat : repeats) {
    document["repeats"].push_back({{"index", repeat.repeat}, {"first", repeat.first}});
  }
  return document;
}

PlannedRun plan_run(const std::vector<fs::path>& listed, const Shard& shard) {
  PlannedRun plan;
  const std::vector<fs::path> once = without_repeats(listed, &plan.repeats);
  const std::vector<std::string> names = unique_output_names(once);
  // Positions in `listed` of the recordings kept: every position but the repeats'.
  std::vector<bool> repeated(listed.size(), false);
  for (const RepeatedRecording& repeat : plan.repeats) repeated[repeat.repeat] = true;
  std::size_t kept = 0;
  for (std::size_t index = 0; index < listed.size(); ++index) {
    if (repeated[index]) continue;
    // The shard takes positions in the list without repeats, as every shard of it sees them.
    if (shard.holds(kept)) plan.recordings.push_back({index, once[kept], names[kept], {}});
    ++kept;
  }
  return plan;
}

void plan_outputs(PlannedRun& plan, const OutDirWriter& writer) {
  for (PlannedRun::Recording& recording : plan.recordings) {
    recording.outputs = writer.plan(recording.name, recording.audio);
  }
}

PlannedRun plan_run(const std::vector<fs::path>& listed, const OutDirWriter& writer,
                    const Shard& shard) {
  PlannedRun plan = plan_run(listed, shard);
  plan_outputs(plan, writer);
  return plan;
}

void check_recording_fits(const pipeline::DiarizationConfig& config, double audio_seconds,
                          std::size_t spill_samples) {
  pipeline::check_step_fits(config, audio_seconds);
  if (spill_samples > 0 && audio_seconds * kSampleRate > static_cast<double>(spill_samples)) {
    // Where its samples will go: an unusable folder is named now, not when the decode reaches it.
    static_cast<void>(temporary_folder());
  }
}

void probe_recordings(PlannedRun& plan, const pipeline::DiarizationConfig& config) {
  const PlannedRun::Recording* longest = nullptr;
  for (PlannedRun::Recording& recording : plan.recordings) {
    try {
      recording.duration_seconds =
          audio::open_audio_source(recording.audio)->info().duration_seconds().value_or(0.0);
      recording.unopened.clear();
    } catch (const Error& error) {
      recording.duration_seconds = 0.0;
      recording.unopened = error.what();
    }
    if (longest == nullptr || recording.duration_seconds > longest->duration_seconds) {
      longest = &recording;
    }
  }
  if (longest == nullptr) return;
  try {
    check_recording_fits(config, longest->duration_seconds);
  } catch (const Error& error) {
    fail("{}: {}", utf8_or_escaped(longest->audio.string()), error.what());
  }
}

std::string json_keeping_bytes(const nlohmann::ordered_json& document) {
  std::string text;
  append_json(text, document);
  return text;
}

}  // namespace parley::corpus
