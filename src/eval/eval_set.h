#pragma once
// The recordings an evaluation runs over, each with its audio, reference turns and scored region.
// Two ways to name them:
//   * a pyannote database protocol subset: a list of URIs (one per line), one RTTM and optionally
//     one UEM holding every URI, and a folder with <uri>.wav (or another audio extension);
//   * a TSV manifest: one recording per line, "audio<TAB>rttm[<TAB>uem]", relative paths taken
//     from the manifest's folder.
// A recording that cannot be evaluated (no audio, not in the reference or UEM) is kept with a
// `problem` so that the run reports it and carries on with the others.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "eval/rttm.h"
#include "eval/timeline.h"

namespace parley::eval {

struct EvalFile {
  std::string uri;              // file id in the reference (and in the hypothesis written)
  std::filesystem::path audio;  // empty when not found
  std::vector<Turn> reference;  // this recording's reference turns
  std::optional<Timeline> uem;  // scored region; none: first to last turn
  std::string problem;          // why it cannot be evaluated; empty when it can
};

// URIs of a pyannote list file, in order. Blank lines and '#' comments are skipped; surrounding
// whitespace is trimmed. Fails on a URI listed twice.
std::vector<std::string> read_uri_list(const std::filesystem::path& list);

// Where the audio of `uri` is in `audio_dir`: <uri>.wav, else <uri> with another audio extension
// (flac, mp3, ogg, opus, m4a), else empty.
std::filesystem::path find_audio(const std::filesystem::path& audio_dir, const std::string& uri);

// One EvalFile per URI of `list`, in list order. The RTTM and UEM are read once; parse errors in
// them fail (they concern every recording).
std::vector<EvalFile> eval_files_from_list(const std::filesystem::path& list,
                                           const std::filesystem::path& audio_dir,
                                           const std::filesystem::path& rttm,
                                           const std::optional<std::filesystem::path>& uem);

// One EvalFile per manifest line. The URI is the reference's file id: the RTTM's only one, or
// the one equal to the audio file's name without extension. A line whose files are missing or
// malformed becomes an EvalFile with a problem; a line with the wrong number of fields fails.
std::vector<EvalFile> eval_files_from_manifest(const std::filesystem::path& manifest);

}  // namespace parley::eval
