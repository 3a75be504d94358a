#pragma once
// The one writer of a diarization result in every format parley offers, used by every face (the
// CLI, `parley serve`, the C API and through it Python):
//   rttm  the turns as RTTM (eval/rttm.h), json  pyannote's DiarizeOutput.serialize
//   (frames/output.h), txt  "start end speaker" lines, srt / vtt  one subtitle cue per turn
//   whose text is the speaker.
// `exclusive` picks the one-speaker-at-a-time turns for rttm, txt, srt and vtt (json always holds
// both). With a speaker-labelled transcript (transcript::assign_speakers over the exclusive
// turns), txt, srt and vtt are that transcript and json gains its segments under "transcript".
#include <span>
#include <string>
#include <string_view>

#include "pipeline/diarizer.h"
#include "transcript/transcript.h"

namespace parley::pipeline {

// "rttm", "json", "txt", "srt", "vtt": what format_result takes.
std::span<const std::string_view> result_format_names();
bool is_result_format(std::string_view name);

struct ResultFormatOptions {
  bool exclusive = false;
  std::string uri;  // the recording's name in RTTM; empty: the result's own
  // Speaker-labelled transcript of the recording; null: none.
  const transcript::Transcript* transcript = nullptr;
};

// The result as `format` (one of result_format_names(); anything else fails naming them).
std::string format_result(const DiarizationResult& result, std::string_view format,
                          const ResultFormatOptions& options = {});

// The transcript's segments and words labelled with the result's exclusive turns (transcript
// fusion; `gap_tolerance` as transcript::FusionOptions).
transcript::Transcript label_transcript(const DiarizationResult& result,
                                        const transcript::Transcript& words,
                                        double gap_tolerance = 1.0);

}  // namespace parley::pipeline
