// `parley diarize AUDIO...`: who spoke when, as RTTM, JSON or text.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "audio/audio_source.h"
#include "audio/decoded_audio.h"
#include "audio/mono_resampled_stream.h"
#include "cli/commands.h"
#include "cli/diarization_options.h"
#include "cli/diarize_corpus.h"
#include "cli/identity_options.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/progress.h"
#include "core/sample_rate.h"
#include "core/stage_timer.h"
#include "core/temporary_directory.h"
#include "core/text.h"
#include "corpus/diarize_file.h"
#include "corpus/engine_layout.h"
#include "corpus/out_dir_writer.h"
#include "corpus/run_plan.h"
#include "corpus/run_record.h"
#include "identity/named_output.h"
#include "models/speed_twin.h"
#include "pipeline/diarizer.h"
#include "pipeline/option_values.h"
#include "pipeline/result_writer.h"
#include "transcript/fusion.h"
#include "transcript/recognizer_process.h"
#include "transcript/transcript.h"
#include "transcript/writers.h"

namespace parley::cli {
namespace {

struct DiarizeArguments {
  std::vector<std::string> audio;
  std::string after_double_dash;  // never filled: accept_files_after_double_dash
  DiarizationFlags flags;
  EngineFlags engine;
  CorpusFlags corpus;
  IdentityFlags identity;
  std::string save_intermediates;
  std::string out_dir;
  std::string transcript;
  TranscriptFlags reading;  // --transcript-format, --gap-tolerance
  std::string asr_command;
  double asr_timeout = 0.0;
  bool print_layout = false;
};

// How the transcript is read and fused: the table's options, as a server's job reads them.
pipeline::TranscriptOptions transcript_options(const DiarizeArguments& arguments) {
  return pipeline::transcript_options(transcript_values(arguments.reading));
}

// `names`: the identification that named `result`'s speakers (their scores go into the text);
// null when none.
std::string fused_transcript(const pipeline::DiarizationResult& result,
                             const transcript::Transcript& words, const DiarizeArguments& arguments,
                             const identity::Identification* names) {
  const transcript::Transcript labelled =
      pipeline::label_transcript(result, words, transcript_options(arguments).fusion);
  pipeline::ResultFormatOptions options;
  options.exclusive = arguments.flags.exclusive;
  options.transcript = &labelled;
  const std::string format = arguments.flags.format.empty() ? "txt" : arguments.flags.format;
  if (names != nullptr) return identity::format_identified(result, *names, format, options);
  return pipeline::format_result(result, format, options);
}

// Where what is kept of a run whose transcript failed goes (<name> is <recording>.rttm and the
// like): in --out-dir; else beside -o, named after it, when -o names a file (or nothing yet);
// else in the current folder.
std::filesystem::path kept_file(const pipeline::DiarizationResult& result,
                                const DiarizeArguments& arguments, const std::string& extension) {
  if (!arguments.out_dir.empty()) {
    return std::filesystem::path(arguments.out_dir) / (result.uri + extension);
  }
  const std::string& out = arguments.flags.out;
  std::error_code error;
  const auto type = std::filesystem::symlink_status(out, error).type();
  if (out != "-" && (type == std::filesystem::file_type::not_found ||
                     type == std::filesystem::file_type::regular)) {
    return std::filesystem::path(out).replace_extension(extension);
  }
  return result.uri + extension;
}

// Saves the turns where kept_file() says, under a name nothing holds (a reference RTTM beside the
// recording stays as it is), and says where; or why they could not be saved.
std::string keep_turns(const pipeline::DiarizationResult& result,
                       const DiarizeArguments& arguments) {
  try {
    const std::filesystem::path saved =
        write_new_file(kept_file(result, arguments, ".rttm"),
                       eval::format_rttm(frames::to_eval_turns(result.turns, result.uri)));
    return fmt::format("the diarization was written to {}", saved.string());
  } catch (const Error& error) {
    return fmt::format("the diarization could not be saved either: {}", error.what());
  }
}

// The recognizer's transcript, which lies in a folder removed with the recognizer, under a name
// nothing holds beside the turns; the path, or nothing when it could not be kept.
std::optional<std::filesystem::path> keep_transcript(const pipeline::DiarizationResult& result,
                                                     const DiarizeArguments& arguments,
                                                     const std::filesystem::path& written) {
  try {
    std::ifstream stream(written, std::ios::binary);
    std::ostringstream bytes;
    bytes << stream.rdbuf();
    return write_new_file(
        kept_file(result, arguments, ".transcript" + written.extension().string()), bytes.str());
  } catch (const Error&) {
    return std::nullopt;
  }
}

std::string summary(const pipeline::DiarizationResult& result, double wall_seconds) {
  std::string stages;
  for (const auto& [stage, seconds] : result.stage_times.entries()) {
    stages += fmt::format("{}{} {:.2f}s", stages.empty() ? "" : ", ", stage, seconds);
  }
  const double speed = wall_seconds > 0.0 ? result.duration_seconds / wall_seconds : 0.0;
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);  // ru_maxrss is in KiB on Linux
  return fmt::format(
      "{}: {:.1f} s of audio, {}, {} in {:.2f} s ({:.1f}x real time, peak RSS {:.0f} MiB) [{}]",
      result.uri, result.duration_seconds, counted(result.speaker_count, "speaker"),
      counted(result.turns.size(), "turn"), wall_seconds, speed,
      static_cast<double>(usage.ru_maxrss) / 1024.0, stages);
}

// The engine layout these flags give (corpus/engine_layout.h), as JSON: what a C caller gets from
// parley_batch_layout for the same settings.
void print_layout(const DiarizeArguments& arguments) {
  const pipeline::DiarizationModels paths = resolve_models(arguments.engine, arguments.flags);
  const pipeline::DiarizationConfig config = diarization_config(arguments.engine, arguments.flags);
  const corpus::EngineLayout layout = corpus::plan_engine_layout(
      paths, config,
      corpus::layout_request(with_layout_values(table_values(arguments.engine, arguments.flags),
                                                arguments.corpus.devices, arguments.corpus.engines,
                                                arguments.corpus.jobs)));
  write_output(layout.describe().dump(2) + "\n", arguments.flags.out);
}

void run_diarize(const DiarizeArguments& arguments) {
  const auto& flags = arguments.flags;
  if (arguments.print_layout) {
    print_layout(arguments);
    return;
  }
  if (arguments.audio.empty() && arguments.corpus.manifests.empty()) {
    fail("name the recordings to diarize (or a --manifest FILE that lists them)");
  }
  const bool with_transcript = !arguments.transcript.empty() || !arguments.asr_command.empty();
  // Usage mistakes fail before any work, not after an hour of it.
  check_format(flags, with_transcript);
  const bool single_recording_features = with_transcript || !arguments.save_intermediates.empty();
  if (!single_recording_features &&
      (arguments.audio.size() != 1 || !arguments.out_dir.empty() ||
       wants_corpus(arguments.corpus) || arguments.identity.link_speakers)) {
    run_corpus(corpus_recordings(arguments.audio, arguments.corpus), arguments.corpus, flags,
               arguments.engine, arguments.out_dir, arguments.identity);
    return;
  }
  if (arguments.identity.link_speakers) {
    fail("--link-speakers links the speakers of a corpus; it takes no transcript or intermediates");
  }
  if (wants_corpus(arguments.corpus)) {
    fail(
        "--manifest, --shard, --devices, --engines and --trace diarize recordings without a "
        "transcript or saved intermediates; run those one recording at a time");
  }
  // What is left works on one recording: a transcript to fuse or intermediates to keep.
  if (arguments.audio.size() != 1) {
    fail("--transcript, --asr-cmd and --save-intermediates take one recording at a time");
  }
  const std::filesystem::path audio_path(arguments.audio.front());
  const std::string output_format = pipeline::result_format_or_default(flags.format);
  if (!arguments.transcript.empty() && !arguments.asr_command.empty()) {
    fail("give either --transcript (an existing transcript) or --asr-cmd (a recognizer to run)");
  }
  // Every destination is checked before any model loads.
  const OutputOptions output_options{.overwrite_read_only = flags.force};
  std::string destination = flags.out;
  // The turns alone go into --out-dir as a corpus run writes them (the same name, a record
  // beside them), so that either run skips what the other finished; a transcript is no
  // diarization a record could describe.
  const bool recorded = !arguments.out_dir.empty() && !with_transcript;
  // Recorded, the name a corpus run gives it (a long one cut and given digits), which is also the
  // recording's name inside the output, as there.
  const std::string output_name =
      recorded ? corpus::plan_run({audio_path}).recordings.front().name : recording_uri(audio_path);
  if (!arguments.out_dir.empty()) {
    prepare_output_folder("--out-dir", arguments.out_dir);
    if (recorded) {
      prepare_output_folder("--out-dir", corpus::records_folder(arguments.out_dir).string());
    }
    // Where a corpus run writes it (corpus/run_record.h).
    destination =
        corpus::RunDestination(arguments.out_dir, output_name, output_format).output.string();
    check_output_file("--out-dir", destination, output_options);
  } else {
    check_output_file("--out", destination, output_options);
  }
  if (!arguments.save_intermediates.empty()) {
    prepare_output_folder("--save-intermediates", arguments.save_intermediates);
  }
  // The input is checked before any model loads, so a typo fails in milliseconds.
  const auto duration = audio::open_audio_source(audio_path)->info().duration_seconds();
  if (duration.value_or(0.0) * kSampleRate >
      static_cast<double>(audio::DecodedAudio::kDefaultSpillSamples)) {
    static_cast<void>(temporary_folder());  // where its samples will go
  }
  // The providers are chosen as every face chooses them, without weighing the recording's length
  // (only checked against memory): the C API's and Python's diarizers are made before they see
  // a recording, and a record's fingerprint holds the providers, so one recording gets the same
  // placement, and the same turns, through each face.
  const pipeline::DiarizationConfig config = corpus::fingerprinted_placement(
      diarization_config(arguments.engine, flags), duration.value_or(0.0));
  // A transcript given as a file is read now: one that does not parse costs no diarization.
  std::optional<transcript::Transcript> given_words;
  if (!arguments.transcript.empty()) {
    given_words =
        transcript::read_transcript(arguments.transcript, transcript_options(arguments).format);
  }

  // The recognizer starts first so that it runs while parley loads its models and diarizes.
  std::unique_ptr<transcript::RecognizerProcess> recognizer;
  if (!arguments.asr_command.empty()) {
    recognizer = std::make_unique<transcript::RecognizerProcess>(arguments.asr_command, audio_path);
  }

  const pipeline::DiarizationModels paths = resolve_models(arguments.engine, flags);
  // Loud on purpose, even with --quiet: labels from a twin are noise.
  models::warn_if_speed_twin(paths.embedding);
  // A library of another model fails before the diarization, not after it.
  const ResultNamer namer(arguments.identity, paths.embedding);
  std::optional<corpus::OutDirWriter> writer;
  std::optional<corpus::PlannedOutputs> planned;
  if (recorded) {
    nlohmann::ordered_json settings = corpus::cached_run_settings(paths, config);
    if (namer.naming()) settings["voiceprints"] = namer.settings();
    writer.emplace(
        corpus::OutDirRequest{arguments.out_dir, {output_format}, flags.exclusive, output_options},
        std::move(settings));
    planned = writer->plan(output_name, audio_path);
  }
  pipeline::Diarizer diarizer(paths, config);

  Progress progress(flags.quiet ? Progress::Mode::kNever : Progress::Mode::kAuto);
  const auto start = std::chrono::steady_clock::now();
  corpus::FileDiarizationOptions file_options;
  if (!arguments.save_intermediates.empty())
    file_options.save_directory = arguments.save_intermediates;
  pipeline::DiarizationResult result =
      corpus::diarize_file(diarizer, audio_path, output_name, progress, file_options);
  const double wall = seconds_since(start);

  std::string text;
  if (with_transcript) {
    // Nothing finished is lost: when no transcript can be fused, the turns are saved (never over
    // an existing file) before the failure is reported, and so is the recognizer's transcript.
    transcript::Transcript words;
    if (recognizer) {
      std::filesystem::path written;
      try {
        std::optional<std::chrono::duration<double>> timeout;
        if (arguments.asr_timeout > 0.0)
          timeout = std::chrono::duration<double>(arguments.asr_timeout);
        written = recognizer->wait(timeout);
      } catch (const Error& error) {
        fail("{}; {}", error.what(), keep_turns(result, arguments));
      }
      try {
        words = transcript::read_transcript(written, transcript_options(arguments).format);
      } catch (const Error& error) {
        std::string message = error.what();
        const auto kept = keep_transcript(result, arguments, written);
        if (kept) message = replace_all(message, written.string(), kept->string());
        fail("{}; {}{}", message, keep_turns(result, arguments),
             kept ? fmt::format(" and the recognizer's transcript to {}", kept->string())
                  : std::string());
      }
    } else {
      words = std::move(*given_words);
    }
    std::optional<identity::Identification> names;
    if (namer.naming()) names = namer.namer().identify(result);
    try {
      text = fused_transcript(result, words, arguments, names ? &*names : nullptr);
    } catch (const Error& error) {
      fail("{}; {}", error.what(), keep_turns(result, arguments));
    }
  } else if (writer) {
    // Written again even when an earlier run finished it: the intermediates were asked for.
    writer->write(*planned, result, wall,
                  [&](const pipeline::DiarizationResult& written, const std::string& format) {
                    DiarizationFlags one = flags;
                    one.format = format;
                    return namer.format(written, one);
                  });
  } else {
    text = namer.format(result, flags);
  }
  if (!writer) write_output(text, destination, output_options);
  if (!flags.quiet) fmt::print(stderr, "{}\n", summary(result, wall));
}

}  // namespace

void add_diarize_command(CLI::App& app) {
  auto arguments = std::make_shared<DiarizeArguments>();
  auto* command = app.add_subcommand(
      "diarize", "Find who spoke when (pyannote community-1 pipeline) and print speaker turns");
  command->add_option("audio", arguments->audio,
                      "recordings (wav, flac, ogg, mp3, m4a, ...); or name them with --manifest");
  accept_files_after_double_dash(*command, arguments->after_double_dash);
  add_diarization_flags(*command, arguments->flags);
  add_engine_flags(*command, arguments->engine);
  add_corpus_flags(*command, arguments->corpus);
  command->add_flag("--print-layout", arguments->print_layout,
                    "print how the engines would be laid out for these flags (devices, engines "
                    "per device, threads, batches; JSON) and exit without diarizing");
  add_identity_flags(*command, arguments->identity);
  command->add_option("--save-intermediates", arguments->save_intermediates,
                      "write every stage's arrays (npz) to this folder, for `parley recluster`");
  command->add_option("--out-dir", arguments->out_dir,
                      "write one <recording>.<format> file per input into this folder");
  command->add_option("--transcript", arguments->transcript,
                      "speech-recognizer transcript to label with speakers (whisper.cpp JSON, "
                      "OpenAI/faster-whisper JSON, SRT, WebVTT or CTM)");
  add_transcript_flags(*command, arguments->reading);
  command->add_option("--asr-cmd", arguments->asr_command,
                      "run a recognizer while diarizing: \"COMMAND {audio} {out}\" (it writes its "
                      "transcript to {out} or {out}.json/.srt/.vtt/.ctm)");
  command
      ->add_option("--asr-timeout", arguments->asr_timeout,
                   "seconds to wait for --asr-cmd after diarization ends (0: no limit)")
      ->check(number_at_least(0))
      ->capture_default_str();
  command->callback([arguments] { run_diarize(*arguments); });
}

}  // namespace parley::cli
