#include "corpus/linked_run.h"

#include "core/error.h"
#include "identity/named_output.h"

namespace parley::corpus {

LinkedRun::LinkedRun(LinkRequest request, const OutDirWriter* writer,
                     std::vector<std::string> formats)
    : request_(std::move(request)), writer_(writer), formats_(std::move(formats)) {
  if (writer_ == nullptr && formats_.size() != 1) {
    fail("a linked run without an output folder writes one format (got {})", formats_.size());
  }
}

void LinkedRun::hold(std::size_t index, std::string uri, RecordingOutcome outcome,
                     PlannedOutputs planned) {
  if (!outcome.ok()) return;
  held_[index] = {std::move(uri), std::move(outcome), std::move(planned), nullptr};
}

void LinkedRun::hold(std::size_t index, std::string uri, RecordingOutcome outcome,
                     PlannedOutputs planned, std::shared_ptr<const OutDirWriter> writer) {
  if (!outcome.ok()) return;
  held_[index] = {std::move(uri), std::move(outcome), std::move(planned), std::move(writer)};
}

LinkedOutcome LinkedRun::finish(const OutputOptions& options) {
  LinkedOutcome done;
  std::vector<identity::RecordingSpeakers> speakers;
  speakers.reserve(held_.size());
  for (const auto& [index, held] : held_) {
    speakers.push_back(identity::recording_speakers(*held.outcome.result));
    speakers.back().recording = held.uri;
  }
  done.linking = identity::link_speakers(speakers, request_.threshold);
  identity::name_linked_speakers(done.linking, request_.candidates);
  std::size_t position = 0;  // the recording's place in the linking
  for (const auto& [index, held] : held_) {
    const std::size_t linked = position++;
    const OutDirWriter* writer = held.writer ? held.writer.get() : writer_;
    try {
      if (writer == nullptr) {
        pipeline::ResultFormatOptions format_options;
        format_options.exclusive = request_.exclusive;
        done.texts[index] = identity::format_linked(*held.outcome.result, done.linking, linked,
                                                    formats_.front(), format_options);
        continue;
      }
      pipeline::ResultFormatOptions format_options;
      format_options.exclusive = writer->request().exclusive;
      writer->write(held.planned, *held.outcome.result, held.outcome.wall_seconds,
                    [&](const pipeline::DiarizationResult& result, const std::string& format) {
                      return identity::format_linked(result, done.linking, linked, format,
                                                     format_options);
                    });
    } catch (const Error& error) {
      done.failures.emplace_back(index, error.what());
    }
  }
  done.table = identity::speakers_table(done.linking);
  if (!request_.speakers_table.empty()) {
    write_file_atomically(request_.speakers_table, done.table, options);
  }
  return done;
}

}  // namespace parley::corpus
