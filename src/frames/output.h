#pragma once
// Speaker turns and the text formats they are written in.
//   RTTM:  eval::format_rttm(to_eval_turns(turns, uri)), the project's one RTTM writer
//          (eval/rttm.h, pyannote.core's Annotation.write_rttm).
//   JSON:  pyannote.audio DiarizeOutput.serialize: {"diarization": [{"start", "end",
//          "speaker"}...], "exclusive_diarization": [...]}, times rounded to 3 decimals, then
//          "speaker_embeddings": {"SPEAKER_00": [D floats], ...}, DiarizeOutput's
//          speaker_embeddings (one centroid per speaker) keyed by label.
//   text:  one "start end speaker" line per turn (seconds, 3 decimals), for people.
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/ndarray.h"
#include "eval/rttm.h"

namespace parley::frames {

// One speech turn: `speaker` speaks from `start` to `end` seconds.
struct Turn {
  double start = 0.0;
  double end = 0.0;
  std::string speaker;  // "SPEAKER_00", ... (empty before labelling)
  int cluster = -1;     // column of the discrete diarization this turn comes from
  // n of SPEAKER_<n>: the row of DiarizationResult::speaker_embeddings (-1 before labelling).
  int speaker_index = -1;

  double duration() const { return end - start; }
};

// `speaker_embeddings`: [speakers, D], row i SPEAKER_<i>'s centroid (DiarizationResult's); each
// float is written in the fewest digits that read back as the same float32.
std::string format_json(std::span<const Turn> diarization,
                        std::span<const Turn> exclusive_diarization,
                        const NdArray<float>& speaker_embeddings);
std::string format_text(std::span<const Turn> turns);

// The same turns as the scoring, transcript and RTTM code holds them (file id `uri`, start and
// duration = end - start), times unchanged. The one conversion between the two turn types.
std::vector<eval::Turn> to_eval_turns(std::span<const Turn> turns, std::string_view uri);

// The recording id for an audio file (eval/rttm.h).
using eval::recording_uri;

// Writes `content` to `path`, failing with the path and the reason.
void write_text_file(const std::filesystem::path& path, std::string_view content);

}  // namespace parley::frames
