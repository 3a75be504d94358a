// `parley voiceprint add|list|rename|remove|export|import|evaluate`: the speaker library that
// `parley diarize --voiceprints` names speakers from (identity/, docs/identity.md).
#include <chrono>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "audio/audio_range.h"
#include "cli/commands.h"
#include "cli/diarization_options.h"
#include "cli/identity_options.h"
#include "core/error.h"
#include "core/progress.h"
#include "core/stage_timer.h"
#include "core/text.h"
#include "corpus/diarize_file.h"
#include "eval/eval_set.h"
#include "identity/evaluation.h"
#include "identity/speaker_library.h"
#include "identity/voiceprint.h"
#include "models/speed_twin.h"
#include "pipeline/diarizer.h"

namespace parley::cli {
namespace {

struct VoiceprintArguments {
  std::string library;
  // add
  std::string name;
  std::string audio;
  std::optional<double> start;
  std::optional<double> end;
  std::string from;
  std::string speaker;
  DiarizationFlags flags;
  EngineFlags engine;
  // rename, remove, export, import
  std::string new_name;
  bool merge = false;
  std::string file;
  bool json = false;
  // evaluate
  std::string manifest;
  std::string names;
  double threshold = identity::kDefaultThreshold;
};

std::string read_file(const std::string& path) {
  if (path == "-") {
    std::ostringstream text;
    text << std::cin.rdbuf();
    return text.str();
  }
  std::ifstream stream(path, std::ios::binary);
  if (!stream) fail("cannot read {}", path);
  std::ostringstream text;
  text << stream.rdbuf();
  return text.str();
}

std::string format_seconds(double seconds) { return fmt::format("{:.3f}", seconds); }

void run_add(const VoiceprintArguments& arguments) {
  identity::check_speaker_name(arguments.name);
  const bool from_result = !arguments.from.empty();
  if (from_result == !arguments.audio.empty()) {
    fail("give either AUDIO (a recording of the speaker) or --from RESULT.json --speaker LABEL");
  }
  if (from_result && arguments.speaker.empty()) {
    fail("--from needs --speaker (SPEAKER_xx: which speaker of the result)");
  }
  if (!from_result && !arguments.speaker.empty()) fail("--speaker goes with --from");
  if (from_result && (arguments.start || arguments.end)) {
    fail("--start and --end cut AUDIO; a result's speaker is already one speaker");
  }
  identity::SpeakerLibrary library(arguments.library);  // a bad library fails before any work
  const pipeline::DiarizationModels paths = resolve_models(arguments.engine, arguments.flags);
  const std::string digest = identity::embedding_model_digest(paths.embedding);
  identity::Voiceprint voiceprint;
  std::string source;
  if (from_result) {
    // The document does not record its model: the one in use now is taken to be it.
    voiceprint = identity::voiceprint_from_result_json(read_file(arguments.from), arguments.speaker,
                                                       digest, arguments.engine.embedding_mode);
    source = fmt::format("{} {}", arguments.from, arguments.speaker);
  } else {
    // A range is checked before any model loads (audio::decode_range checks it again).
    if (arguments.start || arguments.end) {
      audio::check_time_range(arguments.start.value_or(0.0), arguments.end);
    }
    models::warn_if_speed_twin(paths.embedding);
    // The providers weigh the range's length when it is known, else the default.
    const double expected = arguments.end ? *arguments.end - arguments.start.value_or(0.0) : 0.0;
    pipeline::Diarizer diarizer(paths,
                                diarization_config(arguments.engine, arguments.flags, expected));
    Progress progress(arguments.flags.quiet ? Progress::Mode::kNever : Progress::Mode::kAuto);
    const corpus::FileVoiceprint taken =
        corpus::voiceprint_from_file(diarizer, arguments.audio, recording_uri(arguments.audio),
                                     digest, progress, arguments.start, arguments.end);
    voiceprint = taken.voiceprint;
    source = arguments.audio;
    if (arguments.start || arguments.end) {
      source += fmt::format(" {}-{}", format_seconds(taken.start_seconds),
                            format_seconds(taken.start_seconds + taken.seconds));
    }
  }
  const std::int64_t id = library.add(arguments.name, voiceprint, source);
  if (!arguments.flags.quiet) {
    fmt::print(stderr, "added voiceprint {} of {} ({} values, {} embeddings) to {}\n", id,
               arguments.name, voiceprint.embedding.size(), voiceprint.embedding_mode,
               arguments.library);
  }
}

void run_list(const VoiceprintArguments& arguments) {
  const identity::SpeakerLibrary library(arguments.library);
  const auto entries = library.list();
  if (arguments.json) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& entry : entries) list.push_back(identity::listing_json(entry));
    write_output(list.dump(2) + "\n", "-");
    return;
  }
  std::string text;
  for (const auto& entry : entries) {
    text += fmt::format("{}\t{}\t{}\t{}\t{}\n", entry.id, entry.name, entry.created,
                        entry.voiceprint.model_digest.substr(0, 12), entry.source);
  }
  write_output(text, "-");
  std::set<std::string> names;
  for (const auto& entry : entries) names.insert(entry.name);
  fmt::print(stderr, "{}, {}\n", counted(names.size(), "speaker"),
             counted(entries.size(), "voiceprint"));
}

void run_rename(const VoiceprintArguments& arguments) {
  identity::SpeakerLibrary library(arguments.library);
  const std::size_t renamed = library.rename(arguments.name, arguments.new_name, arguments.merge);
  if (renamed == 0) fail("{} has no speaker named {}", arguments.library, arguments.name);
  fmt::print(stderr, "renamed {} of {} to {}\n", counted(renamed, "voiceprint"), arguments.name,
             arguments.new_name);
}

void run_remove(const VoiceprintArguments& arguments) {
  identity::SpeakerLibrary library(arguments.library);
  const std::size_t removed = library.remove(arguments.name);
  if (removed == 0) fail("{} has no speaker named {}", arguments.library, arguments.name);
  fmt::print(stderr, "removed {} of {}\n", counted(removed, "voiceprint"), arguments.name);
}

void run_export(const VoiceprintArguments& arguments) {
  const identity::SpeakerLibrary library(arguments.library);
  write_output(library.export_json(), arguments.file.empty() ? "-" : arguments.file);
}

void run_import(const VoiceprintArguments& arguments) {
  identity::SpeakerLibrary library(arguments.library);
  const std::size_t added = library.import_json(read_file(arguments.file));
  fmt::print(stderr, "imported {} into {}\n", counted(added, "voiceprint"), arguments.library);
}

void run_evaluate(const VoiceprintArguments& arguments) {
  const identity::SpeakerLibrary library(arguments.library);
  const auto files = eval::eval_files_from_manifest(arguments.manifest);
  const pipeline::DiarizationModels paths = resolve_models(arguments.engine, arguments.flags);
  const auto candidates = identity::library_candidates(
      library.list(), identity::embedding_model_digest(paths.embedding));
  std::set<std::string> enrolled;
  if (arguments.names.empty()) {
    for (const auto& candidate : candidates) enrolled.insert(candidate.name);
  } else {
    std::istringstream lines(read_file(arguments.names));
    for (std::string line; std::getline(lines, line);) {
      const auto name = trim(line);
      if (!name.empty() && name.front() != '#') enrolled.emplace(name);
    }
  }
  models::warn_if_speed_twin(paths.embedding);
  pipeline::Diarizer diarizer(paths, diarization_config(arguments.engine, arguments.flags));
  Progress progress(arguments.flags.quiet ? Progress::Mode::kNever : Progress::Mode::kAuto);
  identity::IdentificationTally tally;
  std::size_t skipped = 0;
  for (const auto& file : files) {
    if (!file.problem.empty()) {
      spdlog::warn("{}: {}; skipped", file.uri, file.problem);
      ++skipped;
      continue;
    }
    const auto result = corpus::diarize_file(diarizer, file.audio, file.uri, progress);
    identity::tally_recording(tally, result, file.reference, candidates, enrolled,
                              arguments.threshold);
  }
  const identity::EqualErrorRate eer =
      identity::equal_error_rate(tally.target_scores, tally.nontarget_scores);
  const nlohmann::ordered_json report = {{"recordings", files.size() - skipped},
                                         {"clusters", tally.clusters},
                                         {"threshold", arguments.threshold},
                                         {"identification_accuracy", tally.accuracy()},
                                         {"target_trials", tally.target_scores.size()},
                                         {"nontarget_trials", tally.nontarget_scores.size()},
                                         {"equal_error_rate", eer.rate},
                                         {"equal_error_threshold", eer.threshold}};
  if (arguments.json) {
    write_output(report.dump(2) + "\n", "-");
    return;
  }
  write_output(fmt::format("recordings {}\nclusters {}\nidentification accuracy {:.4f} at "
                           "threshold {}\nequal-error rate {:.4f} at threshold {:.4f} ({} target, "
                           "{} non-target trials)\n",
                           files.size() - skipped, tally.clusters, tally.accuracy(),
                           arguments.threshold, eer.rate, eer.threshold, tally.target_scores.size(),
                           tally.nontarget_scores.size()),
               "-");
}

CLI::App* library_subcommand(CLI::App& parent, const std::string& name, const std::string& help,
                             VoiceprintArguments& arguments) {
  auto* command = parent.add_subcommand(name, help);
  command->add_option("--library", arguments.library, "the speaker library (an SQLite file)")
      ->required();
  return command;
}

}  // namespace

void add_voiceprint_command(CLI::App& app) {
  auto arguments = std::make_shared<VoiceprintArguments>();
  auto* voiceprint = app.add_subcommand(
      "voiceprint", "Keep a library of named voiceprints, for `parley diarize --voiceprints`");
  voiceprint->require_subcommand(1);

  auto* add = library_subcommand(*voiceprint, "add",
                                 "Add a voiceprint of NAME from AUDIO (or a range of it), or from "
                                 "a speaker of a `parley diarize --format json` result",
                                 *arguments);
  add->add_option("name", arguments->name, "the speaker's name (one word: Alice_Smith)")
      ->required();
  add->add_option("audio", arguments->audio, "a recording where only this speaker talks");
  add->add_option("--start", arguments->start, "seconds into AUDIO where the speaker starts")
      ->check(number_at_least(0));
  add->add_option("--end", arguments->end, "seconds into AUDIO where the speaker stops")
      ->check(number_above(0));
  add->add_option("--from", arguments->from, "a JSON result of `parley diarize` (same models)")
      ->check(CLI::ExistingFile);
  add->add_option("--speaker", arguments->speaker, "the speaker of --from (SPEAKER_xx)");
  add_clustering_flags(*add, arguments->flags);
  add_engine_flags(*add, arguments->engine);
  add->callback([arguments] { run_add(*arguments); });

  auto* list = library_subcommand(*voiceprint, "list", "List the voiceprints", *arguments);
  list->add_flag("--json", arguments->json, "as JSON");
  list->callback([arguments] { run_list(*arguments); });

  auto* rename = library_subcommand(*voiceprint, "rename", "Rename a speaker", *arguments);
  rename->add_option("name", arguments->name, "the speaker's name now")->required();
  rename->add_option("new-name", arguments->new_name, "the new name")->required();
  rename->add_flag("--merge", arguments->merge, "when NEW-NAME exists, join the two speakers");
  rename->callback([arguments] { run_rename(*arguments); });

  auto* remove = library_subcommand(*voiceprint, "remove",
                                    "Remove a speaker and all its voiceprints", *arguments);
  remove->add_option("name", arguments->name, "the speaker's name")->required();
  remove->callback([arguments] { run_remove(*arguments); });

  auto* exported =
      library_subcommand(*voiceprint, "export", "Write the library as JSON", *arguments);
  exported->add_option("-o,--out", arguments->file, "where (default: standard output)");
  exported->callback([arguments] { run_export(*arguments); });

  auto* imported =
      library_subcommand(*voiceprint, "import",
                         "Add the voiceprints of an exported library (all or none)", *arguments);
  imported->add_option("file", arguments->file, "a `parley voiceprint export` file (- : stdin)")
      ->required();
  imported->callback([arguments] { run_import(*arguments); });

  auto* evaluate = library_subcommand(
      *voiceprint, "evaluate",
      "Identification accuracy and equal-error rate on labelled recordings (the reference RTTMs' "
      "speaker labels are the names)",
      *arguments);
  evaluate
      ->add_option("--manifest", arguments->manifest,
                   "TSV: audio<TAB>reference.rttm per line (as `parley eval --manifest`)")
      ->required()
      ->check(CLI::ExistingFile);
  evaluate->add_option("--names", arguments->names,
                       "the names the library should know, one a line (default: its names)");
  add_threshold_flag(*evaluate, arguments->threshold);
  evaluate->add_flag("--json", arguments->json, "as JSON");
  add_clustering_flags(*evaluate, arguments->flags);
  add_engine_flags(*evaluate, arguments->engine);
  evaluate->callback([arguments] { run_evaluate(*arguments); });
}

}  // namespace parley::cli
