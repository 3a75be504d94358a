#include "corpus/out_dir_writer.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "core/text.h"
#include "pipeline/result_writer.h"

namespace parley::corpus {

bool PlannedOutputs::finished() const {
  return !formats.empty() && std::all_of(formats.begin(), formats.end(),
                                         [](const PlannedRecording& one) { return one.finished; });
}

OutDirWriter::OutDirWriter(OutDirRequest request, nlohmann::ordered_json settings)
    : request_(std::move(request)), settings_(std::move(settings)) {
  if (request_.formats.empty()) {
    fail("formats is empty: name at least one of {}",
         fmt::join(pipeline::result_format_names(), ", "));
  }
  for (const std::string& format : request_.formats) {
    if (!pipeline::is_result_format(format)) {
      fail("format must be one of {} (got '{}')", fmt::join(pipeline::result_format_names(), ", "),
           format);
    }
  }
  // A format asked twice would write one file twice.
  std::vector<std::string> sorted = request_.formats;
  std::sort(sorted.begin(), sorted.end());
  if (const auto twice = std::adjacent_find(sorted.begin(), sorted.end()); twice != sorted.end()) {
    fail("formats names {} twice; name each format once", *twice);
  }
  settings_["exclusive"] = request_.exclusive;
}

PlannedOutputs OutDirWriter::plan(const std::string& name,
                                  const std::filesystem::path& audio) const {
  PlannedOutputs planned;
  for (const std::string& format : request_.formats) {
    planned.formats.push_back(plan_recording(request_.out_dir, name, format, settings_, audio));
  }
  return planned;
}

std::string OutDirWriter::format(const pipeline::DiarizationResult& result,
                                 const std::string& format) const {
  pipeline::ResultFormatOptions options;
  options.exclusive = request_.exclusive;
  return pipeline::format_result(result, format, options);
}

void OutDirWriter::write(const PlannedOutputs& planned, const pipeline::DiarizationResult& result,
                         double wall_seconds, const Formatter& formatter) const {
  for (const PlannedRecording& one : planned.formats) {
    const std::string& format_name = one.settings.at("format").get_ref<const std::string&>();
    const std::string text =
        formatter ? formatter(result, format_name) : format(result, format_name);
    write_result(one.destination, text, make_record(one, text, result, wall_seconds),
                 request_.output_options);
  }
}

void OutputClaims::claim(const PlannedOutputs& planned, std::size_t index,
                         const std::filesystem::path& audio) {
  std::vector<std::string> outputs;
  for (const PlannedRecording& one : planned.formats) {
    std::string output = std::filesystem::absolute(one.destination.output).lexically_normal();
    if (const auto claim = claimed_.find(output); claim != claimed_.end()) {
      throw OutputClash(fmt::format("{} would write {}, which recording {} ({}) writes already",
                                    utf8_or_escaped(audio.string()), utf8_or_escaped(output),
                                    claim->second.first, utf8_or_escaped(claim->second.second)));
    }
    outputs.push_back(std::move(output));
  }
  for (std::string& output : outputs) {
    claimed_.emplace(std::move(output), std::pair(index, audio.string()));
  }
}

}  // namespace parley::corpus
