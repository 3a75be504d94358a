#pragma once
// The documents a finished job is served as, made once when it finishes (so that a result never
// changes after it is first served, and serving it needs no models), by the writer every face
// uses (pipeline/result_writer.h): rttm, json, txt, srt and vtt, with a transcript its
// speaker-labelled text in txt, srt and vtt and its segments in json. A result named from a
// speaker library carries its names and scores in all five (identity/named_output.h).
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "identity/identification.h"
#include "pipeline/diarizer.h"
#include "pipeline/option_values.h"

namespace parley::server {

// The formats a job's result comes in: all five, with a transcript or without.
std::vector<std::string> result_formats();

// Format name -> document. `exclusive` picks the one-speaker-at-a-time turns for rttm, txt, srt
// and vtt; `transcript` (empty: none) is read and fused with the exclusive turns as
// `reading` says (the job's transcript_format and gap_tolerance), as `parley diarize
// --transcript` does with the same flags. `names`: the identification that named `result`
// (null: none).
std::map<std::string, std::string> result_documents(
    const pipeline::DiarizationResult& result, bool exclusive,
    const std::filesystem::path& transcript, const identity::Identification* names = nullptr,
    const pipeline::TranscriptOptions& reading = {});

// MIME type of a format's document.
std::string result_content_type(const std::string& format);

}  // namespace parley::server
