// `parley eval`: diarize a set of recordings with human references, score each one and the whole
// set, and time it. Results go to --out DIR one recording at a time (a JSON record and the
// hypothesis RTTM), so an interrupted run resumes where it stopped; a recording whose settings
// changed is diarized again. docs/eval.md describes the inputs, the JSON and resuming.
//
// The work is the engine's: each recording is diarized as `parley diarize FILE` diarizes one
// (corpus::diarize_file: decoded while the networks start), one at a time so that its timings are
// its own, and its hypothesis goes through the writer of a run into a folder
// (corpus::OutDirWriter) under the settings every face fingerprints (corpus::cached_run_settings),
// which also decides what an earlier run finished. This file only translates flags, scores and
// prints.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "audio/audio_source.h"
#include "cli/commands.h"
#include "cli/diarization_options.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/progress.h"
#include "core/stage_timer.h"
#include "corpus/diarize_file.h"
#include "corpus/out_dir_writer.h"
#include "corpus/run_record.h"
#include "eval/der.h"
#include "eval/eval_results.h"
#include "eval/eval_set.h"
#include "eval/rttm.h"
#include "eval/text_records.h"
#include "frames/output.h"
#include "models/speed_twin.h"
#include "pipeline/diarizer.h"
#include "plot/charts.h"
#include "plot/gnuplot.h"

namespace parley::cli {
namespace {

struct EvalArguments {
  std::vector<std::string> lists;
  std::vector<std::string> audio_dirs;
  std::vector<std::string> rttms;
  std::vector<std::string> uems;
  std::string manifest;
  DiarizationFlags flags;
  EngineFlags engine;
  double collar = 0.0;
  bool skip_overlap = false;
  std::string convention;
  bool exclusive = false;
  std::string out_dir;
  std::string json;
  std::string label;
  std::string plot;
  std::vector<std::string> compare;
  bool redo = false;
  bool force = false;
};

// --rttm, --uem and --audio-dir come once for every list or once per list.
const std::string& for_list(const std::vector<std::string>& values, std::size_t index,
                            const char* flag, std::size_t lists) {
  if (values.size() != 1 && values.size() != lists) {
    fail("{} was given {} times for {} --list: give it once (shared) or once per list", flag,
         values.size(), lists);
  }
  return values.size() == 1 ? values.front() : values[index];
}

std::vector<eval::EvalFile> recordings(const EvalArguments& arguments) {
  if (!arguments.manifest.empty()) return eval::eval_files_from_manifest(arguments.manifest);
  if (arguments.lists.empty()) {
    fail(
        "name the recordings: --list FILE.lst --audio-dir DIR --rttm REF.rttm [--uem U.uem], or "
        "--manifest FILE.tsv");
  }
  if (arguments.rttms.empty()) fail("--list needs --rttm, the reference turns of its URIs");
  std::vector<eval::EvalFile> files;
  for (std::size_t i = 0; i < arguments.lists.size(); ++i) {
    const std::string list = arguments.lists[i];
    const std::filesystem::path audio_dir =
        arguments.audio_dirs.empty()
            ? std::filesystem::path(list).parent_path()
            : std::filesystem::path(
                  for_list(arguments.audio_dirs, i, "--audio-dir", arguments.lists.size()));
    std::optional<std::filesystem::path> uem;
    if (!arguments.uems.empty()) uem = for_list(arguments.uems, i, "--uem", arguments.lists.size());
    auto from_list = eval::eval_files_from_list(
        list, audio_dir, for_list(arguments.rttms, i, "--rttm", arguments.lists.size()), uem);
    for (auto& file : from_list) {
      for (const auto& earlier : files) {
        if (earlier.uri == file.uri) fail("'{}' is in two lists; each recording once", file.uri);
      }
      files.push_back(std::move(file));
    }
  }
  return files;
}

// File names for a URI: '/' (pyannote URIs may hold it) and '%' are percent-encoded.
std::string file_stem(const std::string& uri) {
  std::string stem;
  for (char c : uri) {
    if (c == '/') {
      stem += "%2F";
    } else if (c == '%') {
      stem += "%25";
    } else {
      stem += c;
    }
  }
  return stem;
}

class EvalRunner {
 public:
  EvalRunner(const EvalArguments& arguments, pipeline::DiarizationModels models,
             pipeline::DiarizationConfig config, eval::ScoringOptions scoring)
      : arguments_(arguments),
        models_(std::move(models)),
        config_(std::move(config)),
        scoring_(scoring),
        output_options_{.overwrite_read_only = arguments.force},
        // The hypotheses are a run into DIR/files as `parley diarize --out-dir` makes one
        // (corpus/out_dir_writer.h): the same fingerprint, records and skip decision.
        writer_(corpus::OutDirRequest{std::filesystem::path(arguments.out_dir) / "files",
                                      {"rttm"},
                                      arguments.exclusive,
                                      output_options_},
                corpus::cached_run_settings(models_, config_)),
        progress_(arguments.flags.quiet ? Progress::Mode::kNever : Progress::Mode::kAuto) {}

  const nlohmann::ordered_json& settings() const { return writer_.settings(); }

  // Where --out keeps a recording's scored record (the hypothesis and its run record are the
  // writer's: files/<uri>.rttm, files/.parley/<uri>.rttm.json).
  static std::filesystem::path record_path(const std::string& out_dir, const std::string& uri) {
    return std::filesystem::path(out_dir) / "files" / (file_stem(uri) + ".json");
  }

  eval::EvalFileResult evaluate(const eval::EvalFile& file) {
    eval::EvalFileResult result;
    result.uri = file.uri;
    result.audio = file.audio.string();
    if (!file.problem.empty()) {
      result.error = file.problem;
      say("{}: skipped: {}", file.uri, file.problem);
      return result;
    }
    try {
      const corpus::PlannedOutputs planned = writer_.plan(file_stem(file.uri), file.audio);
      const corpus::PlannedRecording& run = planned.formats.front();
      result.fingerprint = run.fingerprint;
      std::string hypothesis;
      if (!reuse_earlier(file, planned, result, hypothesis)) {
        const pipeline::DiarizationResult diarization = diarize(file, result);
        hypothesis = writer_.format(diarization, "rttm");
        if (!arguments_.out_dir.empty()) writer_.write(planned, diarization, result.wall_seconds);
      }
      const std::vector<eval::Turn> turns = eval::parse_rttm(hypothesis, file.uri);
      const eval::Timeline* uem = file.uem ? &*file.uem : nullptr;
      result.scores = eval::score_file(file.uri, file.reference, turns, uem, scoring_).times;
      result.ok = true;
      // Rewritten on resume too, so that the record carries the latest scoring.
      if (!arguments_.out_dir.empty()) {
        nlohmann::ordered_json record = eval::file_result_json(result);
        record["settings"] = run.settings;
        write_file_atomically(record_path(file.uri), record.dump(2) + "\n", output_options_);
      }
      say("{}: DER {:.2f} %, {:.1f} s of audio in {:.2f} s ({:.1f}x real time){}", file.uri,
          100.0 * result.scores.der(), result.audio_seconds, result.wall_seconds, result.speed(),
          result.resumed ? ", from the earlier run" : "");
    } catch (const Error& error) {
      // Models that do not load fail every recording alike: stop instead of repeating it.
      if (models_failed_) throw;
      result.ok = false;
      result.error = error.what();
      say("{}: failed: {}", file.uri, error.what());
    }
    return result;
  }

 private:
  template <typename... Args>
  void say(fmt::format_string<Args...> format, Args&&... args) {
    if (!arguments_.flags.quiet) {
      fmt::print(stderr, "{}\n", fmt::format(format, std::forward<Args>(args)...));
    }
  }

  std::filesystem::path record_path(const std::string& uri) const {
    return record_path(arguments_.out_dir, uri);
  }

  // True when --out holds this recording's hypothesis from a run with the same settings and
  // audio (the writer's plan finds it finished, as a rerun of `parley diarize --out-dir` would):
  // its timings and hypothesis are taken over (and scored again, so scoring options may change).
  // Otherwise says why it is diarized again.
  bool reuse_earlier(const eval::EvalFile& file, const corpus::PlannedOutputs& planned,
                     eval::EvalFileResult& result, std::string& hypothesis) {
    if (arguments_.out_dir.empty()) return false;
    const corpus::PlannedRecording& run = planned.formats.front();
    if (!planned.finished()) {
      explain_redo(file, run);
      return false;
    }
    if (arguments_.redo) {
      say("{}: --redo: diarizing again", file.uri);
      return false;
    }
    const auto record = corpus::finished_record(run.destination, run.fingerprint);
    if (!record) {
      // Changed since the plan was made: made again.
      explain_redo(file, run);
      return false;
    }
    hypothesis = eval::read_text_file(run.destination.output, "hypothesis RTTM");
    result.audio_seconds = record->value("audio_seconds", 0.0);
    result.wall_seconds = record->value("wall_seconds", 0.0);
    const nlohmann::json stages = record->value("stage_seconds", nlohmann::json::object());
    for (const auto& [stage, seconds] : stages.items()) {
      if (seconds.is_number()) result.stage_seconds.add(stage, seconds.get<double>());
    }
    result.speakers = record->value("speakers", std::size_t{0});
    result.resumed = true;
    return true;
  }

  // Why an earlier hypothesis of `run` is not taken over, when there is one.
  void explain_redo(const eval::EvalFile& file, const corpus::PlannedRecording& run) {
    std::error_code error;
    if (!std::filesystem::exists(run.destination.record, error) ||
        !std::filesystem::exists(run.destination.output, error)) {
      return;
    }
    nlohmann::ordered_json record;
    try {
      std::ifstream stream(run.destination.record);
      record = nlohmann::ordered_json::parse(stream);
    } catch (const nlohmann::json::exception&) {
      say("{}: the earlier record {} is unreadable; diarizing again", file.uri,
          run.destination.record.string());
      return;
    }
    if (record.value("fingerprint", std::string()) != run.fingerprint) {
      std::string changes;
      for (const std::string& change : eval::changed_settings(
               record.value("settings", nlohmann::ordered_json::object()), run.settings)) {
        changes += (changes.empty() ? "" : "; ") + change;
      }
      say("{}: settings changed since the earlier run ({}); diarizing again", file.uri,
          changes.empty() ? std::string("fingerprint differs") : changes);
      return;
    }
    say("{}: the earlier hypothesis {} does not match its record (changed or damaged since); "
        "diarizing again",
        file.uri, run.destination.output.string());
  }

  pipeline::DiarizationResult diarize(const eval::EvalFile& file, eval::EvalFileResult& result) {
    if (!diarizer_) {
      models::warn_if_speed_twin(models_.embedding);
      models_failed_ = true;
      diarizer_ = std::make_unique<pipeline::Diarizer>(models_, config_);
      models_failed_ = false;
    }
    const auto start = std::chrono::steady_clock::now();
    pipeline::DiarizationResult diarization =
        corpus::diarize_file(*diarizer_, file.audio, file.uri, progress_);
    result.wall_seconds = seconds_since(start);
    result.audio_seconds = diarization.duration_seconds;
    result.stage_seconds = diarization.stage_times;
    result.speakers = diarization.speaker_count;
    return diarization;
  }

  const EvalArguments& arguments_;
  pipeline::DiarizationModels models_;
  pipeline::DiarizationConfig config_;
  eval::ScoringOptions scoring_;
  OutputOptions output_options_;
  corpus::OutDirWriter writer_;
  Progress progress_;
  std::unique_ptr<pipeline::Diarizer> diarizer_;
  bool models_failed_ = false;
};

void run_eval(const EvalArguments& arguments) {
  if (!arguments.plot.empty()) {
    static_cast<void>(plot::image_format_for(arguments.plot));
    static_cast<void>(plot::require_gnuplot());
  }
  if (!arguments.manifest.empty() && !arguments.lists.empty()) {
    fail("give --manifest or --list, not both");
  }
  eval::ScoringOptions scoring;
  if (!arguments.convention.empty()) {
    scoring = eval::scoring_options(eval::parse_convention(arguments.convention));
  } else {
    scoring.collar = arguments.collar;
    scoring.skip_overlap = arguments.skip_overlap;
  }
  // Destinations and compared systems are checked first: a wrong path fails before an hour of
  // diarization (an --out that was a file gave "internal error: filesystem error").
  const OutputOptions output_options{.overwrite_read_only = arguments.force};
  if (!arguments.out_dir.empty()) {
    prepare_output_folder("--out", arguments.out_dir);
    prepare_output_folder("--out", std::filesystem::path(arguments.out_dir) / "files");
    check_output_file("--out", (std::filesystem::path(arguments.out_dir) / "eval.json").string(),
                      output_options);
  }
  check_output_file("--json", arguments.json, output_options);
  check_output_file("--plot", arguments.plot, output_options);
  std::vector<eval::SystemSummary> compared;
  for (const std::string& path : arguments.compare) {
    compared.push_back(eval::read_system_summary(path));
  }
  const std::vector<eval::EvalFile> files = recordings(arguments);
  if (!arguments.out_dir.empty()) {
    for (const eval::EvalFile& file : files) {
      check_output_file("--out", EvalRunner::record_path(arguments.out_dir, file.uri).string(),
                        output_options);
      const corpus::RunDestination hypothesis(std::filesystem::path(arguments.out_dir) / "files",
                                              file_stem(file.uri), "rttm");
      check_output_file("--out", hypothesis.output.string(), output_options);
    }
  }
  double longest_input = 0.0;  // what the provider placement weighs
  for (const eval::EvalFile& file : files) {
    if (!file.problem.empty()) continue;
    try {
      const auto duration = audio::open_audio_source(file.audio)->info().duration_seconds();
      longest_input = std::max(longest_input, duration.value_or(0.0));
    } catch (const Error&) {
      // Reported when the recording's turn comes.
    }
  }
  const pipeline::DiarizationConfig config = corpus::fingerprinted_placement(
      diarization_config(arguments.engine, arguments.flags), longest_input);
  const pipeline::DiarizationModels models = resolve_models(arguments.engine, arguments.flags);

  EvalRunner runner(arguments, models, config, scoring);
  eval::EvalRun run;
  run.settings = runner.settings();
  // The providers as the fingerprint names them.
  run.system =
      arguments.label.empty()
          ? fmt::format("parley {} step {} {} {}", arguments.flags.clustering, config.step_seconds,
                        stages::embedding_mode_name(config.embedding_mode),
                        run.settings.at("providers").get<std::string>())
          : arguments.label;
  run.scoring = scoring;
  run.uem = std::any_of(files.begin(), files.end(), [](const auto& file) { return file.uem; });
  run.speed_twin = models::is_speed_twin(models.embedding);
  for (const eval::EvalFile& file : files) run.files.push_back(runner.evaluate(file));

  const nlohmann::ordered_json json = eval::eval_run_json(run);
  if (!arguments.out_dir.empty()) {
    write_file_atomically(std::filesystem::path(arguments.out_dir) / "eval.json",
                          json.dump(2) + "\n", output_options);
  }
  if (!arguments.json.empty()) write_output(json.dump(2) + "\n", arguments.json, output_options);
  if (arguments.json != "-") fmt::print("{}", eval::format_eval_table(run));

  if (!arguments.plot.empty()) {
    std::vector<eval::SystemSummary> systems = {eval::system_summary(run)};
    systems.insert(systems.end(), compared.begin(), compared.end());
    std::vector<plot::SpeedAccuracyPoint> points;
    std::vector<plot::StageBar> bars;
    for (const eval::SystemSummary& system : systems) {
      points.push_back({system.system, system.speed, system.der, system.speed_twin});
      bars.push_back({system.system, system.stage_seconds, system.audio_seconds, system.speed});
    }
    plot::plot_accuracy_speed(
        points, bars,
        fmt::format("accuracy against speed ({} recordings)", eval::eval_totals(run.files).files),
        arguments.plot, output_options);
    if (!arguments.flags.quiet) fmt::print(stderr, "chart written to {}\n", arguments.plot);
  }
  const eval::EvalTotals totals = eval::eval_totals(run.files);
  if (totals.failed > 0) {
    fail("{} of {} recordings failed (listed above); the others are scored", totals.failed,
         totals.files);
  }
}

}  // namespace

void add_eval_command(CLI::App& app) {
  auto arguments = std::make_shared<EvalArguments>();
  auto* command = app.add_subcommand(
      "eval",
      "Diarize recordings that have reference RTTMs, score each and the whole set (DER) and time "
      "them; resumable with --out (docs/eval.md)");
  command->add_option("--list", arguments->lists,
                      "pyannote database list: one URI per line (repeatable: one set per list)");
  command->add_option("--audio-dir", arguments->audio_dirs,
                      "folder with <uri>.wav (or .flac, ...); default: the list's folder");
  command->add_option("--rttm", arguments->rttms,
                      "reference RTTM holding the list's URIs (once, or once per --list)");
  command->add_option("--uem", arguments->uems,
                      "UEM with the scored region of each URI (once, or once per --list)");
  command->add_option("--manifest", arguments->manifest,
                      "TSV: audio<TAB>rttm[<TAB>uem] per line, paths relative to the manifest");
  add_clustering_flags(*command, arguments->flags);
  add_engine_flags(*command, arguments->engine);
  auto* collar = command
                     ->add_option("--collar", arguments->collar,
                                  "seconds unscored on each side of every reference boundary "
                                  "(md-eval -c; pyannote.metrics' collar is twice this)")
                     ->check(number_at_least(0))
                     ->capture_default_str();
  auto* skip_overlap = command->add_flag("--skip-overlap", arguments->skip_overlap,
                                         "do not score overlapped reference speech (md-eval -1)");
  command
      ->add_option("--convention", arguments->convention,
                   "strict, voxconverse or lenient (docs/scoring.md)")
      ->check(CLI::IsMember({"strict", "voxconverse", "lenient"}))
      ->excludes(collar)
      ->excludes(skip_overlap);
  command->add_flag("--exclusive", arguments->exclusive,
                    "score the exclusive turns (one speaker at a time)");
  command->add_option("--out", arguments->out_dir,
                      "folder for results: files/<uri>.json and .rttm per recording and "
                      "eval.json; a rerun skips recordings done with the same settings");
  command->add_flag("--redo", arguments->redo,
                    "diarize every recording again even when --out has its result");
  add_force_flag(*command, arguments->force);
  command->add_option("--json", arguments->json,
                      "write the results JSON (schema parley-eval/2) here; - for standard output");
  command->add_option("--label", arguments->label,
                      "name of this system in the JSON and the chart (default: parley <clustering> "
                      "step <s> <embedding mode> <provider>)");
  command->add_option("--plot", arguments->plot,
                      "draw accuracy against speed and time per stage into this .png or .svg "
                      "(needs gnuplot)");
  command
      ->add_option("--compare", arguments->compare,
                   "other eval JSON files (other modes, peer systems) to put on the chart")
      ->expected(1, -1);
  command->callback([arguments] { run_eval(*arguments); });
}

}  // namespace parley::cli
