#include "server/result_documents.h"

#include <optional>

#include "identity/named_output.h"
#include "pipeline/result_writer.h"
#include "transcript/transcript.h"

namespace parley::server {

std::vector<std::string> result_formats() {
  const auto names = pipeline::result_format_names();
  return {names.begin(), names.end()};
}

std::map<std::string, std::string> result_documents(const pipeline::DiarizationResult& result,
                                                    bool exclusive,
                                                    const std::filesystem::path& transcript,
                                                    const identity::Identification* names,
                                                    const pipeline::TranscriptOptions& reading) {
  std::optional<transcript::Transcript> labelled;
  if (!transcript.empty()) {
    labelled = pipeline::label_transcript(
        result, transcript::read_transcript(transcript, reading.format), reading.fusion);
  }
  pipeline::ResultFormatOptions options;
  options.exclusive = exclusive;
  options.transcript = labelled ? &*labelled : nullptr;
  std::map<std::string, std::string> documents;
  for (const std::string_view format : pipeline::result_format_names()) {
    documents.emplace(format, names != nullptr
                                  ? identity::format_identified(result, *names, format, options)
                                  : pipeline::format_result(result, format, options));
  }
  return documents;
}

std::string result_content_type(const std::string& format) {
  if (format == "json") return "application/json";
  if (format == "vtt") return "text/vtt; charset=utf-8";
  if (format == "srt") return "application/x-subrip; charset=utf-8";
  return "text/plain; charset=utf-8";
}

}  // namespace parley::server
