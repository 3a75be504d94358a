#include "cli/diarize_corpus.h"

#include <sys/resource.h>

#include <chrono>
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/log_subject.h"
#include "core/progress.h"
#include "core/stage_timer.h"
#include "core/text.h"
#include "corpus/corpus_engine.h"
#include "corpus/corpus_run.h"
#include "corpus/engine_layout.h"
#include "corpus/linked_run.h"
#include "corpus/out_dir_writer.h"
#include "corpus/recording_list.h"
#include "corpus/run_plan.h"
#include "corpus/run_record.h"
#include "models/speed_twin.h"
#include "pipeline/result_writer.h"

namespace parley::cli {
namespace fs = std::filesystem;
using corpus::read_recording_manifest;
using corpus::Shard;
namespace {

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);  // ru_maxrss is in KiB on Linux
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

// CLI11's usage line shows a hidden positional as "[]".
class UsageWithoutHiddenPositionals : public CLI::Formatter {
 public:
  std::string make_usage(const CLI::App* app, std::string name) const override {
    std::string usage = CLI::Formatter::make_usage(app, std::move(name));
    for (auto at = usage.find(" []"); at != std::string::npos; at = usage.find(" []")) {
      usage.erase(at, 3);
    }
    return usage;
  }
};

}  // namespace

void accept_files_after_double_dash(CLI::App& command, std::string& unused) {
  command.add_option("after-double-dash", unused)->group("");
  command.formatter(std::make_shared<UsageWithoutHiddenPositionals>());
}

void add_corpus_flags(CLI::App& command, CorpusFlags& flags) {
  // One file per --manifest: without that, CLI11 takes the recordings after it for manifests.
  command
      .add_option("--manifest", flags.manifests,
                  "file listing recordings, one path per line (or parley eval's TSV manifest; "
                  "a pipe, or - for standard input); may be repeated")
      ->allow_extra_args(false);
  command.add_option("--shard", flags.shard,
                     "K/N: diarize only the K-th of N parts of the list (one job of a job array)");
  add_engine_layout_flags(command, flags.devices, flags.engines, flags.jobs);
  add_table_flag(command, "trace", flags.trace);
}

nlohmann::json with_trace_value(nlohmann::json values, const std::string& trace) {
  if (!trace.empty()) values["trace"] = trace;
  return values;
}

nlohmann::json with_layout_values(nlohmann::json values, const std::string& devices, int engines,
                                  int jobs) {
  if (!devices.empty()) values["devices"] = devices;
  if (engines > 0) values["engines"] = engines;  // 0: automatic, the table's null
  values["jobs"] = jobs;
  return values;
}

void add_engine_layout_flags(CLI::App& command, std::string& devices, int& engines, int& jobs) {
  // The option table's (pipeline/option_table.h); the bound on --engines depends on the device,
  // which plan_engine_layout checks.
  add_table_flag(command, "devices", devices);
  add_table_flag(command, "engines", engines);
  add_table_flag(command, "jobs", jobs);
}

bool wants_corpus(const CorpusFlags& flags) {
  return !flags.manifests.empty() || !flags.shard.empty() || !flags.devices.empty() ||
         flags.engines > 1 || !flags.trace.empty();
}

std::vector<fs::path> corpus_recordings(const std::vector<std::string>& audio,
                                        const CorpusFlags& flags) {
  std::vector<fs::path> recordings(audio.begin(), audio.end());
  for (const auto& manifest : flags.manifests) {
    for (auto& path : read_recording_manifest(manifest)) recordings.push_back(std::move(path));
  }
  if (recordings.empty()) fail("name the recordings to diarize, or a --manifest that lists them");
  return recordings;
}

void run_corpus(const std::vector<fs::path>& audio, const CorpusFlags& corpus,
                const DiarizationFlags& flags, const EngineFlags& engine,
                const std::string& out_dir, const IdentityFlags& identity) {
  const auto start = std::chrono::steady_clock::now();
  // Warnings from deep in the pipeline name the recording they are about (core/log_subject.h).
  show_log_subjects(*spdlog::default_logger());
  const std::string format = pipeline::result_format_or_default(flags.format);
  const bool linking = identity.link_speakers;
  const std::string table_path =
      !identity.speakers_table.empty()
          ? identity.speakers_table
          : (out_dir.empty() ? std::string() : (fs::path(out_dir) / "speakers.tsv").string());
  if (linking && table_path.empty()) {
    fail("--link-speakers writes a speakers table: pass --out-dir DIR or --speakers-table FILE");
  }
  if (!linking && !identity.speakers_table.empty()) {
    fail("--speakers-table is the table of --link-speakers");
  }
  if (out_dir.empty() && format != "rttm") {
    fail("--format {} writes one document per recording: with several, pass --out-dir DIR", format);
  }
  // Each file once, named over the whole list (so that every shard names a recording alike), and
  // this shard's part of it; a file named twice is diarized once and the run goes on.
  const Shard shard = corpus.shard.empty() ? Shard{} : Shard::parse(corpus.shard);
  corpus::PlannedRun plan = corpus::plan_run(audio, shard);
  for (const auto& repeat : plan.repeats) {
    spdlog::warn("{} is listed twice (also as {}); diarizing it once",
                 audio[repeat.repeat].string(), audio[repeat.first].string());
  }

  // Every destination is checked before any work, so that nothing finished is lost to a typo.
  check_format(flags, false);
  const OutputOptions output_options{.overwrite_read_only = flags.force};
  const fs::path records_dir = corpus::records_folder(out_dir);
  if (!out_dir.empty()) {
    prepare_output_folder("--out-dir", out_dir);
    prepare_output_folder("--out-dir", records_dir);
  } else {
    check_output_file("--out", flags.out, output_options);
  }
  if (linking) check_output_file("--speakers-table", table_path, output_options);
  if (!corpus.trace.empty()) check_output_file("--trace", corpus.trace, output_options);

  Progress progress(flags.quiet ? Progress::Mode::kNever : Progress::Mode::kAuto);
  const auto say = [&](const std::string& line) {
    if (!flags.quiet) progress.note(line);
  };
  // Inputs are probed before the models are found: one that cannot be opened fails alone, and a
  // list the run cannot hold is refused at once (corpus::probe_recordings).
  const pipeline::DiarizationConfig diarization = diarization_config(engine, flags);
  corpus::probe_recordings(plan, diarization);
  std::vector<std::size_t> opened;  // the plan's recordings whose audio opened
  std::vector<std::pair<fs::path, std::string>> unopened;
  const std::size_t listed = plan.recordings.size();
  for (std::size_t k = 0; k < listed; ++k) {
    if (plan.recordings[k].unopened.empty()) {
      opened.push_back(k);
    } else {
      unopened.emplace_back(plan.recordings[k].audio, plan.recordings[k].unopened);
    }
  }
  const pipeline::DiarizationModels paths = resolve_models(engine, flags);
  // The library is read (and checked against the embedding model) before any model loads.
  const ResultNamer namer(identity, paths.embedding);

  // The run's texts: without --out-dir the RTTM goes out in input order, each as soon as those
  // before it are (indices are the run's: the recordings that opened, in plan order).
  std::vector<std::optional<std::string>> texts;
  std::size_t next_to_print = 0;
  std::size_t failed_before = 0;
  corpus::CorpusRunCallbacks callbacks;
  callbacks.on_failure = [&](std::size_t k, const fs::path& recording, const std::string& why) {
    // A probe's message names the file already.
    progress.note(k < unopened.size() ? fmt::format("parley: {}", why)
                                      : fmt::format("parley: {}: {}", recording.string(), why));
    if (k < texts.size()) texts[k] = std::string();
  };
  callbacks.on_result = [&](corpus::RecordingOutcome outcome) {
    // A linked run's results come with its end (run.linked()).
    if (out_dir.empty()) texts[outcome.index] = namer.format(*outcome.result, flags);
  };
  callbacks.on_progress = [&](const corpus::CorpusRunSummary& summary) {
    if (out_dir.empty() && flags.out == "-" && !linking) {
      for (; next_to_print < texts.size() && texts[next_to_print]; ++next_to_print) {
        write_output(*texts[next_to_print], "-");
        texts[next_to_print]->clear();
      }
    }
    const double elapsed = summary.run_seconds;
    progress.update(summary.done + summary.failed - failed_before,
                    fmt::format("{:.2f} h {:.0f}x", summary.audio_seconds / 3600.0,
                                elapsed > 0.0 ? summary.audio_seconds / elapsed : 0.0));
  };
  callbacks.format = [&](const pipeline::DiarizationResult& result, const std::string& chosen) {
    DiarizationFlags one = flags;
    one.format = chosen;
    return namer.format(result, one);
  };
  corpus::CorpusRunConfig run_config;
  run_config.models = paths;
  run_config.diarization = diarization;
  run_config.layout = corpus::layout_request(with_trace_value(
      with_layout_values(table_values(engine, flags), corpus.devices, corpus.engines, corpus.jobs),
      corpus.trace));
  // Linked: the speakers are linked once every recording is diarized, and each result written
  // then (a linked run diarizes every recording again: corpus/corpus_run.h).
  if (linking) {
    run_config.link = corpus::CorpusLinking{
        corpus::LinkRequest{namer.threshold(),
                            table_path == "-" ? fs::path() : fs::path(table_path),
                            namer.candidates(), flags.exclusive},
        format, output_options};
  }
  corpus::CorpusRun run(std::move(run_config), std::move(callbacks));
  for (const auto& [recording, why] : unopened) run.add_failed(recording, why);

  nlohmann::ordered_json settings = corpus::cached_run_settings(paths, run.config().diarization);
  if (namer.naming()) settings["voiceprints"] = namer.settings();
  if (linking) settings["link_speakers"] = {{"threshold", identity.threshold}};

  // A rerun skips what an earlier run finished with the same settings and audio.
  std::shared_ptr<const corpus::OutDirWriter> writer;
  if (!out_dir.empty()) {
    writer = std::make_shared<const corpus::OutDirWriter>(
        corpus::OutDirRequest{out_dir, {format}, flags.exclusive, output_options}, settings);
    corpus::plan_outputs(plan, *writer);
    // Each file still to write, before any model loads (one finished earlier is left alone,
    // even when read-only).
    for (const std::size_t k : opened) {
      if (!linking && plan.recordings[k].finished()) continue;
      for (const corpus::PlannedRecording& one : plan.recordings[k].outputs.formats) {
        check_output_file("--out-dir", one.destination.output.string(), output_options);
      }
    }
  }
  // Indices of the run: the probe failures first, then the recordings that opened.
  texts.resize(unopened.size(), std::string());  // nothing to print for those
  for (const std::size_t k : opened) {
    corpus::PlannedRun::Recording& recording = plan.recordings[k];
    std::optional<corpus::OutDirTarget> target;
    if (writer) target = corpus::OutDirTarget{writer, recording.outputs};
    texts.emplace_back();
    corpus::CorpusRecording queued;
    queued.audio = recording.audio;
    queued.uri = recording.name;
    queued.duration_seconds = recording.duration_seconds;  // probed above
    run.add(std::move(queued), std::move(target));
  }
  run.finish();
  const std::size_t skipped = run.summary().skipped;
  if (skipped > 0) {
    say(fmt::format(
        "{} of {} recordings were finished by an earlier run with the same settings: skipped",
        skipped, listed));
  }

  if (run.summary().pending() > 0) {
    models::warn_if_speed_twin(paths.embedding);
    run.load();
    failed_before = run.summary().failed;
    progress.begin("recordings", run.summary().pending());
    run.run();
    progress.end();
    if (const corpus::LinkedOutcome* done = run.linked()) {
      for (const auto& [k, text] : done->texts) texts[k] = text;
      // Linked: the table goes to standard output, before the results, when asked to.
      if (table_path == "-") write_output(done->table, "-");
      if (out_dir.empty() && flags.out == "-") {
        for (const auto& text : texts) write_output(text.value_or(""), "-");
      }
    }
    if (out_dir.empty() && flags.out != "-") {
      std::string combined;
      for (const auto& text : texts) combined += text.value_or("");
      write_output(combined, flags.out, output_options);
    }
  }

  const corpus::CorpusRunSummary summary = run.summary();
  const std::size_t diarized = summary.done;
  const std::size_t failed = summary.failed;
  const double audio_seconds = summary.audio_seconds;
  const double run_seconds = summary.run_seconds;
  if (!flags.quiet && diarized == 0) {
    // No speed to report: nothing ran through the models.
    fmt::print(stderr, "nothing diarized: {} of {} recordings done earlier, {} failed ({:.1f} s)\n",
               skipped, listed, failed, seconds_since(start));
  } else if (!flags.quiet) {
    fmt::print(stderr,
               "{} of {} recordings diarized ({} done earlier, {} failed): {:.2f} h of audio in "
               "{:.1f} s ({:.1f}x real time; {:.1f} s with model loading), peak RSS {:.0f} MiB\n",
               diarized, listed, skipped, failed, audio_seconds / 3600.0, run_seconds,
               run_seconds > 0.0 ? audio_seconds / run_seconds : 0.0, seconds_since(start),
               peak_rss_mib());
  }
  if (failed > 0) {
    fail("{} of {} recordings failed (messages above); the others were {}", failed, listed,
         out_dir.empty() ? "written" : "written to " + out_dir + " and a rerun skips them");
  }
}

}  // namespace parley::cli
