#include "server/result_documents.h"

#include <nlohmann/json.hpp>

#include "eval/rttm.h"
#include "frames/output.h"
#include "transcript/fusion.h"
#include "transcript/transcript.h"
#include "transcript/writers.h"

namespace parley::server {

std::vector<std::string> result_formats(bool with_transcript) {
  if (with_transcript) return {"rttm", "json", "txt", "srt", "vtt"};
  return {"rttm", "json", "txt"};
}

std::map<std::string, std::string> result_documents(const pipeline::DiarizationResult& result,
                                                    bool exclusive,
                                                    const std::filesystem::path& transcript) {
  const auto& turns = exclusive ? result.exclusive_turns : result.turns;
  std::map<std::string, std::string> documents;
  documents["rttm"] = eval::format_rttm(pipeline::to_eval_turns(turns, result.uri));
  documents["json"] =
      pipeline::format_json(result.turns, result.exclusive_turns, result.speaker_embeddings);
  documents["txt"] = pipeline::format_text(turns);
  if (!transcript.empty()) {
    const transcript::Transcript words = transcript::read_transcript(transcript);
    const auto exclusive_turns = pipeline::to_eval_turns(result.exclusive_turns, result.uri);
    const transcript::Transcript fused = transcript::assign_speakers(words, exclusive_turns);
    auto json = nlohmann::ordered_json::parse(documents["json"]);
    json["transcript"] = transcript::transcript_json(fused)["segments"];
    // A transcript's text need not be UTF-8; its writers replace what is not (U+FFFD) too.
    documents["json"] =
        json.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
    documents["txt"] = transcript::format_text(fused);
    documents["srt"] = transcript::format_srt(fused);
    documents["vtt"] = transcript::format_webvtt(fused);
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
