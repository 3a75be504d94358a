#include <cstdio>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.h"
#include "cli/diarization_options.h"
#include "core/error.h"
#include "eval/rttm.h"
#include "pipeline/option_values.h"
#include "transcript/fusion.h"
#include "transcript/transcript.h"
#include "transcript/writers.h"

namespace parley::cli {
namespace {

struct FuseArguments {
  std::string transcript;
  std::string rttm;
  TranscriptFlags reading;  // --transcript-format, --gap-tolerance
  std::string format;
  std::string out;
  std::string file_id;
  std::string unknown_speaker = "UNKNOWN";
  bool force = false;
};

// The RTTM turns of the one recording being fused.
std::vector<eval::Turn> recording_turns(const FuseArguments& arguments) {
  std::vector<eval::Turn> turns = eval::read_rttm(arguments.rttm);
  std::set<std::string> file_ids;
  for (const eval::Turn& turn : turns) file_ids.insert(turn.file_id);
  if (!arguments.file_id.empty()) {
    if (!file_ids.contains(arguments.file_id)) {
      fail("{}: no turns of recording '{}' (it has {}); check --file-id", arguments.rttm,
           arguments.file_id,
           file_ids.empty() ? "none" : fmt::format("{}", fmt::join(file_ids, ", ")));
    }
    std::erase_if(turns, [&](const eval::Turn& turn) { return turn.file_id != arguments.file_id; });
  } else if (file_ids.size() > 1) {
    fail(
        "{}: holds turns of {} recordings ({}); pass --file-id to say which one the transcript "
        "belongs to",
        arguments.rttm, file_ids.size(), fmt::join(file_ids, ", "));
  }
  if (turns.empty()) {
    fmt::print(stderr, "parley: warning: {} has no SPEAKER turns; every word will be {}\n",
               arguments.rttm, arguments.unknown_speaker);
  }
  return turns;
}

void run_fuse(const FuseArguments& arguments) {
  // Read and fused as `parley diarize --transcript` and a server's job do with these values.
  pipeline::TranscriptOptions reading =
      pipeline::transcript_options(transcript_values(arguments.reading));
  reading.fusion.unknown_speaker = arguments.unknown_speaker;
  transcript::OutputFormat output_format = transcript::OutputFormat::text;
  if (!arguments.format.empty()) {
    output_format = transcript::parse_output_format(arguments.format);
  } else if (!arguments.out.empty()) {
    output_format =
        transcript::output_format_for_path(arguments.out).value_or(transcript::OutputFormat::text);
  }

  const OutputOptions output_options{.overwrite_read_only = arguments.force};
  check_output_file("--out", arguments.out, output_options);
  const transcript::Transcript input =
      transcript::read_transcript(arguments.transcript, reading.format);
  const std::vector<eval::Turn> turns = recording_turns(arguments);
  const transcript::Transcript labelled = transcript::assign_speakers(input, turns, reading.fusion);
  const std::string text = transcript::format_transcript(labelled, output_format);
  write_output(text, arguments.out, output_options);
}

}  // namespace

void add_fuse_command(CLI::App& app) {
  auto arguments = std::make_shared<FuseArguments>();
  auto* command = app.add_subcommand(
      "fuse",
      "Speaker-labelled transcript: give each word (or segment) of a speech-recognition "
      "transcript the speaker of the diarization turn it overlaps most (docs/transcripts.md)");
  command
      ->add_option("--transcript", arguments->transcript,
                   "Transcript: SRT, WebVTT, CTM, whisper.cpp JSON (-oj/-ojf) or "
                   "openai/faster-whisper JSON")
      ->required();
  command->add_option("--rttm", arguments->rttm, "Diarization of the same recording (RTTM)")
      ->required();
  add_transcript_flags(*command, arguments->reading);
  command->add_option("--format", arguments->format,
                      "Output: srt, vtt, txt or json (default: from the --out extension, else "
                      "txt)");
  command->add_option("--out", arguments->out, "Output file (default: standard output)");
  add_force_flag(*command, arguments->force);
  command->add_option("--file-id", arguments->file_id,
                      "Recording whose turns to use when the RTTM holds several");
  command
      ->add_option("--unknown-speaker", arguments->unknown_speaker,
                   "Name for words no turn is close to")
      ->capture_default_str();
  command->callback([arguments] { run_fuse(*arguments); });
}

}  // namespace parley::cli
