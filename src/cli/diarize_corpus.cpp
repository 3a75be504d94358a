#include "cli/diarize_corpus.h"

#include <sys/resource.h>

#include <chrono>
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "audio/audio_source.h"
#include "audio/decoded_audio.h"
#include "core/error.h"
#include "core/log_subject.h"
#include "core/progress.h"
#include "core/sample_rate.h"
#include "core/stage_timer.h"
#include "core/temporary_directory.h"
#include "core/text.h"
#include "corpus/corpus_engine.h"
#include "corpus/engine_layout.h"
#include "corpus/linked_run.h"
#include "corpus/out_dir_writer.h"
#include "corpus/recording_list.h"
#include "corpus/run_plan.h"
#include "corpus/run_record.h"
#include "models/speed_twin.h"

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
         flags.engines > 1;
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
  const std::string format = flags.format.empty() ? "rttm" : flags.format;
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
  const fs::path records_dir = fs::path(out_dir) / ".parley";
  if (!out_dir.empty()) {
    prepare_output_folder("--out-dir", out_dir);
    prepare_output_folder("--out-dir", records_dir);
  } else {
    check_output_file("--out", flags.out, output_options);
  }
  if (linking) check_output_file("--speakers-table", table_path, output_options);

  Progress progress(flags.quiet ? Progress::Mode::kNever : Progress::Mode::kAuto);
  const auto say = [&](const std::string& line) {
    if (!flags.quiet) progress.note(line);
  };
  // Inputs are probed before models load: one that cannot be opened fails alone, at once.
  std::vector<std::size_t> opened;  // the plan's recordings whose audio opened
  const std::size_t listed = plan.recordings.size();
  std::size_t failed = 0;
  double longest = 0.0;
  for (std::size_t k = 0; k < listed; ++k) {
    try {
      const auto duration =
          audio::open_audio_source(plan.recordings[k].audio)->info().duration_seconds();
      longest = std::max(longest, duration.value_or(0.0));
      opened.push_back(k);
    } catch (const Error& error) {
      progress.note(fmt::format("parley: {}", error.what()));
      ++failed;
    }
  }

  if (longest * kSampleRate > static_cast<double>(audio::DecodedAudio::kDefaultSpillSamples)) {
    static_cast<void>(temporary_folder());  // where the samples of the longest will go
  }
  const pipeline::DiarizationModels paths = resolve_models(engine, flags);
  pipeline::DiarizationConfig config =
      corpus::fingerprinted_placement(diarization_config(engine, flags), longest);
  const corpus::EngineLayout layout = corpus::plan_engine_layout(
      paths, config,
      corpus::layout_request(with_layout_values(table_values(engine, flags), corpus.devices,
                                                corpus.engines, corpus.jobs)));
  nlohmann::ordered_json settings = corpus::run_settings(
      config, paths,
      corpus::describe_providers(layout.segmentation_provider, layout.embedding_provider),
      flags.exclusive);
  // The library is read (and checked against the embedding model) before any model loads.
  const ResultNamer namer(identity, paths.embedding);
  if (namer.naming()) settings["voiceprints"] = namer.settings();
  if (linking) settings["link_speakers"] = {{"threshold", identity.threshold}};

  // A rerun skips what an earlier run finished with the same settings and audio.
  std::optional<corpus::OutDirWriter> writer;
  if (!out_dir.empty()) {
    writer.emplace(corpus::OutDirRequest{out_dir, {format}, flags.exclusive, output_options},
                   settings);
    corpus::plan_outputs(plan, *writer);
  }
  std::vector<corpus::CorpusRecording> inputs;
  std::vector<corpus::PlannedOutputs> destinations;
  std::size_t skipped = 0;
  for (const std::size_t k : opened) {
    corpus::PlannedRun::Recording& recording = plan.recordings[k];
    // Linking needs every recording's speakers, so a linked run diarizes them all again.
    if (writer && !linking && recording.finished()) {
      ++skipped;
      continue;
    }
    inputs.push_back({recording.audio, recording.name, {}, {}});
    destinations.push_back(std::move(recording.outputs));
  }
  if (skipped > 0) {
    say(fmt::format(
        "{} of {} recordings were finished by an earlier run with the same settings: skipped",
        skipped, listed));
  }

  // Each file still to write, before any model loads (one finished earlier is left alone, even
  // when read-only).
  for (const corpus::PlannedOutputs& planned : destinations) {
    for (const corpus::PlannedRecording& one : planned.formats) {
      check_output_file("--out-dir", one.destination.output.string(), output_options);
    }
  }

  std::size_t diarized = 0;
  double audio_seconds = 0.0;
  double run_seconds = 0.0;
  if (!inputs.empty()) {
    models::warn_if_speed_twin(paths.embedding);
    const auto corpus_engine = corpus::make_corpus_engine(paths, layout);

    // Without --out-dir the RTTM goes out in input order, each as soon as those before it are.
    std::vector<std::optional<std::string>> texts(inputs.size());
    // Linked: every result waits for the end of the run (corpus/linked_run.h); the table goes to
    // standard output, before the results, when asked to.
    std::optional<corpus::LinkedRun> linked;
    if (linking) {
      linked.emplace(corpus::LinkRequest{namer.threshold(),
                                         table_path == "-" ? fs::path() : fs::path(table_path),
                                         namer.candidates(), flags.exclusive},
                     writer ? &*writer : nullptr, std::vector<std::string>{format});
    }
    std::size_t next_to_print = 0;
    const std::size_t failed_before = failed;
    const auto run_start = std::chrono::steady_clock::now();
    progress.begin("recordings", inputs.size());
    corpus_engine->run(inputs, [&](corpus::RecordingOutcome outcome) {
      const std::size_t k = outcome.index;
      if (outcome.ok() && linked) {
        ++diarized;
        audio_seconds += outcome.result->duration_seconds;
        linked->hold(k, inputs[k].uri, std::move(outcome),
                     writer ? destinations[k] : corpus::PlannedOutputs{});
        progress.update(diarized + failed - failed_before);
        return;
      }
      if (outcome.ok() && !out_dir.empty()) {
        // A result that cannot be written (a full disk, a name the file system refuses) fails
        // that recording alone, like a model error.
        try {
          writer->write(destinations[k], *outcome.result, outcome.wall_seconds,
                        [&](const pipeline::DiarizationResult& result, const std::string& chosen) {
                          DiarizationFlags one = flags;
                          one.format = chosen;
                          return namer.format(result, one);
                        });
        } catch (const Error& error) {
          outcome.error = error.what();
          outcome.result.reset();
        }
      }
      if (!outcome.ok()) {
        progress.note(fmt::format("parley: {}: {}", inputs[k].audio.string(), outcome.error));
        ++failed;
        texts[k] = std::string();
      } else {
        const pipeline::DiarizationResult& result = *outcome.result;
        if (out_dir.empty()) texts[k] = namer.format(result, flags);
        ++diarized;
        audio_seconds += result.duration_seconds;
      }
      if (out_dir.empty() && flags.out == "-") {
        for (; next_to_print < texts.size() && texts[next_to_print]; ++next_to_print) {
          write_output(*texts[next_to_print], "-");
          texts[next_to_print]->clear();
        }
      }
      const double elapsed = seconds_since(run_start);
      progress.update(diarized + failed - failed_before,
                      fmt::format("{:.2f} h {:.0f}x", audio_seconds / 3600.0,
                                  elapsed > 0.0 ? audio_seconds / elapsed : 0.0));
    });
    progress.end();
    if (linked) {
      corpus::LinkedOutcome done = linked->finish(output_options);
      for (auto& [k, text] : done.texts) texts[k] = std::move(text);
      for (const auto& [k, why] : done.failures) {
        spdlog::error("{}: {}", inputs[k].audio.string(), why);
        ++failed;
        --diarized;
      }
      if (table_path == "-") write_output(done.table, "-");
      if (out_dir.empty() && flags.out == "-") {
        for (const auto& text : texts) write_output(text.value_or(""), "-");
      }
    }
    run_seconds = seconds_since(run_start);
    if (out_dir.empty() && flags.out != "-") {
      std::string combined;
      for (const auto& text : texts) combined += text.value_or("");
      write_output(combined, flags.out, output_options);
    }
  }

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
