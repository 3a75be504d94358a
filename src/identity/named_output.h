#pragma once
// A named or linked diarization in any result format (pipeline/result_writer.h): the names as
// labels, each named speaker's scores where the format has room for them (RTTM column 9 holds the
// confidence; txt, srt and vtt label it "Alice (0.81)" with the cosine score, a fused transcript
// too) and, in JSON, the "identification" or "speaker_linking" object. Every face that names
// speakers (the CLI, `parley serve`, the C API and Python) writes through here.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "identity/identification.h"
#include "identity/speaker_linking.h"
#include "pipeline/result_writer.h"

namespace parley::identity {

// The named speakers' scores, by the name their turns carry.
std::vector<pipeline::SpeakerScore> speaker_scores(const Identification& identification);

// `named` (a result identify() renamed) as `format`, with `identification`'s scores; json gains
// the "identification" object (add_identification_json). `options.speaker_scores` is replaced.
std::string format_identified(const pipeline::DiarizationResult& named,
                              const Identification& identification, std::string_view format,
                              pipeline::ResultFormatOptions options = {});

// Recording `index` of a linked corpus as `format`: turns renamed to the global labels, a global
// speaker named from a library tagged with its scores as format_identified does, and in json the
// "speaker_linking" object: {"threshold", "speakers": [{"label", "global", "name"?, "score"?,
// "confidence"?, "reason"?}...]}, "speaker_embeddings" keyed by the global labels.
std::string format_linked(pipeline::DiarizationResult result, const Linking& linking,
                          std::size_t index, std::string_view format,
                          pipeline::ResultFormatOptions options = {});

}  // namespace parley::identity
