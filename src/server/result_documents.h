#pragma once
// The documents a finished job is served as, made once when it finishes (so that a result never
// changes after it is first served, and serving it needs no models):
//   rttm  the turns as RTTM, json  pyannote's {"diarization", "exclusive_diarization",
//   "speaker_embeddings"} plus, with a transcript, "transcript" (the speaker-labelled segments),
//   txt  the turns one per line, or
//   with a transcript the speaker-labelled text, srt / vtt  the speaker-labelled transcript (only
//   with a transcript).
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "pipeline/diarizer.h"

namespace parley::server {

// The formats a job's result comes in: with a transcript all five, else rttm, json and txt.
std::vector<std::string> result_formats(bool with_transcript);

// Format name -> document. `exclusive` picks the one-speaker-at-a-time turns for rttm and txt;
// `transcript` (empty: none) is fused with the exclusive turns, as `parley diarize --transcript`.
std::map<std::string, std::string> result_documents(const pipeline::DiarizationResult& result,
                                                    bool exclusive,
                                                    const std::filesystem::path& transcript);

// MIME type of a format's document.
std::string result_content_type(const std::string& format);

}  // namespace parley::server
