#pragma once
// The one writer of a diarization result in every format parley offers, used by every face (the
// CLI, `parley serve`, the C API and through it Python):
//   rttm  the turns as RTTM (eval/rttm.h), json  pyannote's DiarizeOutput.serialize
//   (frames/output.h), txt  "start end speaker" lines, srt / vtt  one subtitle cue per turn
//   whose text is the speaker.
// `exclusive` picks the one-speaker-at-a-time turns for rttm, txt, srt and vtt (json always holds
// both). With a speaker-labelled transcript (transcript::assign_speakers over the exclusive
// turns), txt, srt and vtt are that transcript and json gains its segments under "transcript".
// With speaker scores (a named speaker's identification, identity/named_output.h), the named
// speakers carry them in every text format: RTTM column 9 holds the confidence (3 decimals; <NA>
// for the others, so that an unnamed result's bytes never change), and txt, srt and vtt label
// them "Alice (0.81)" with the cosine score (2 decimals), in a fused transcript too. json is left
// as it is: its "identification" object (identity/) holds the scores.
#include <span>
#include <string>
#include <string_view>

#include "pipeline/diarizer.h"
#include "transcript/fusion.h"
#include "transcript/transcript.h"

namespace parley::pipeline {

// "rttm", "json", "txt", "srt", "vtt": what format_result takes.
std::span<const std::string_view> result_format_names();
bool is_result_format(std::string_view name);
// The format a result is written in when none is asked for (the option "format"'s default).
inline constexpr std::string_view kDefaultResultFormat = "rttm";
// `format`, or kDefaultResultFormat where it is empty (a face's "not given").
std::string result_format_or_default(std::string_view format);

// The scores of one named speaker; `label` is the label its turns carry (the name).
struct SpeakerScore {
  std::string label;
  double score = 0.0;       // cosine, what txt, srt and vtt show
  double confidence = 0.0;  // 0 to 1, what RTTM's column 9 holds
};

struct ResultFormatOptions {
  bool exclusive = false;
  std::string uri;  // the recording's name in RTTM; empty: the result's own
  // Speaker-labelled transcript of the recording; null: none.
  const transcript::Transcript* transcript = nullptr;
  // Scores of the named speakers, by label; a label not listed is written as it is.
  std::span<const SpeakerScore> speaker_scores;
};

// A named speaker's label as txt, srt and vtt show it: "Alice (0.81)"; `label` itself when
// `scores` does not list it.
std::string scored_label(const std::string& label, std::span<const SpeakerScore> scores);

// The result as `format` (one of result_format_names(); anything else fails naming them).
std::string format_result(const DiarizationResult& result, std::string_view format,
                          const ResultFormatOptions& options = {});

// The transcript's segments and words labelled with the result's exclusive turns (transcript
// fusion; a face's `fusion` from its option values: pipeline::transcript_options).
transcript::Transcript label_transcript(const DiarizationResult& result,
                                        const transcript::Transcript& words,
                                        const transcript::FusionOptions& fusion = {});

}  // namespace parley::pipeline
