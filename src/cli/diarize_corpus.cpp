#include "cli/diarize_corpus.h"

#include <sys/resource.h>

#include <charconv>
#include <chrono>
#include <fstream>
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "audio/audio_source.h"
#include "audio/decoded_audio.h"
#include "cli/recording_list.h"
#include "cli/run_settings.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/log_subject.h"
#include "core/progress.h"
#include "core/sample_rate.h"
#include "core/sha256.h"
#include "core/stage_timer.h"
#include "core/temporary_directory.h"
#include "core/text.h"
#include "corpus/corpus_engine.h"
#include "eval/eval_results.h"
#include "models/speed_twin.h"
#include "runtime/device_memory.h"

namespace parley::cli {
namespace fs = std::filesystem;
namespace {

// More would only contend for the same cores and device.
constexpr int kMaxJobs = corpus::kMaxStageThreads;

}  // namespace

std::vector<int> parse_devices(const std::string& text, const ModelProviders& providers) {
  if (text.empty()) return {};
  const runtime::ProviderId provider = runtime::traits(providers.embedding).accelerator
                                           ? providers.embedding
                                           : providers.segmentation;
  if (!runtime::traits(provider).accelerator) {
    fail(
        "--devices needs a GPU provider, and both models run on the CPU here; leave --devices "
        "out (or use --engines to run several model sets on the CPU)");
  }
  std::vector<int> devices;
  if (text == "all") {
    const int count = runtime::count_devices(provider);
    if (count == 0) {
      fail("--devices all: no {} device answered; name them instead, e.g. --devices 0,1",
           runtime::provider_name(provider));
    }
    for (int device = 0; device < count; ++device) devices.push_back(device);
    return devices;
  }
  std::string_view rest(text);
  while (true) {
    const std::string_view item = rest.substr(0, rest.find(','));
    int device = -1;
    const auto [end, status] = std::from_chars(item.data(), item.data() + item.size(), device);
    if (status != std::errc() || end != item.data() + item.size() || device < 0) {
      fail("--devices '{}': expected device numbers such as 0,1 or 'all'", text);
    }
    devices.push_back(device);
    if (item.size() == rest.size()) break;
    rest.remove_prefix(item.size() + 1);
  }
  return devices;
}

namespace {

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);  // ru_maxrss is in KiB on Linux
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

// Where one recording's result and its record go under --out-dir. Each format has a record of
// its own, so that outputs of several formats in one folder are each recognised by a rerun.
struct Destination {
  fs::path output;  // <out_dir>/<name>.<format>
  fs::path record;  // <out_dir>/.parley/<name>.<format>.json

  Destination(const fs::path& out_dir, const std::string& name, const std::string& format)
      : output(out_dir / (name + "." + format)),
        record(out_dir / ".parley" / (name + "." + format + ".json")) {}
};

// True when `destination` holds a whole result made with `fingerprint` (which names the
// format): its record says so and the output is byte for byte the one the record describes.
bool finished_earlier(const Destination& destination, const std::string& fingerprint) {
  std::error_code error;
  if (!fs::is_regular_file(destination.output, error) ||
      !fs::is_regular_file(destination.record, error)) {
    return false;
  }
  try {
    std::ifstream stream(destination.record);
    const nlohmann::json record = nlohmann::json::parse(stream);
    return record.value("fingerprint", std::string()) == fingerprint &&
           record.value("output_sha256", std::string()) == sha256_file(destination.output);
  } catch (const std::exception&) {
    return false;  // unreadable: made again
  }
}

// The record of a finished recording: what a rerun checks, and what it took.
std::string record_text(const corpus::CorpusRecording& input, const Destination& destination,
                        const std::string& text, const std::string& fingerprint,
                        const nlohmann::ordered_json& settings,
                        const corpus::RecordingOutcome& outcome) {
  const pipeline::DiarizationResult& result = *outcome.result;
  std::error_code error;
  fs::path absolute = fs::absolute(input.audio, error);
  if (error) absolute = input.audio;
  // File names need not be UTF-8; the record must be.
  nlohmann::ordered_json record = {
      {"audio", utf8_or_escaped(absolute.string())},
      {"output", utf8_or_escaped(destination.output.filename().string())},
      {"output_sha256", sha256_text(text)},
      {"fingerprint", fingerprint},
      {"audio_seconds", result.duration_seconds},
      {"speakers", result.speaker_count},
      {"turns", result.turns.size()},
      {"wall_seconds", outcome.wall_seconds},
      {"stage_seconds", nlohmann::ordered_json::object()},
      {"settings", file_settings(settings, input.audio)}};
  for (const auto& [stage, seconds] : result.stage_times.entries()) {
    record["stage_seconds"][stage] = seconds;
  }
  return record.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace

namespace {

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

namespace {

// corpus::automatic_engines_per_device for the GPUs in use (the fewest any of them holds); one
// on the CPU.
int automatic_engines(const ModelProviders& providers, const std::vector<int>& device_numbers) {
  if (!runtime::traits(providers.embedding).accelerator) return 1;
  std::vector<int> devices = device_numbers;
  if (devices.empty()) {
    int device = 0;  // an unreadable device_id fails later, where the session is made
    if (const auto id = providers.embedding_options.find("device_id");
        id != providers.embedding_options.end()) {
      std::from_chars(id->second.data(), id->second.data() + id->second.size(), device);
    }
    devices.push_back(device);
  }
  int engines = corpus::kMaxAutomaticEnginesPerDevice;
  for (const int device : devices) {
    engines = std::min(engines, corpus::automatic_engines_per_device(
                                    runtime::query_device_memory(providers.embedding, device)));
  }
  return engines;
}

}  // namespace

std::unique_ptr<corpus::CorpusEngine> make_corpus_engine(const pipeline::DiarizationModels& models,
                                                         pipeline::DiarizationConfig config,
                                                         const ModelProviders& providers,
                                                         const ModelProviderFlags& layout_flags,
                                                         const std::string& devices, int engines,
                                                         int jobs) {
  const std::vector<int> device_numbers = parse_devices(devices, providers);
  if (engines == 0) {
    engines = automatic_engines(providers, device_numbers);
    if (runtime::traits(providers.embedding).accelerator) {
      spdlog::info("{} engine(s) per GPU, from its free memory (--engines sets it)", engines);
    }
  }
  const bool on_gpu = runtime::traits(providers.embedding).accelerator;
  corpus::check_engines_per_device(engines, on_gpu,
                                   std::max<std::size_t>(1, device_numbers.size()));
  if (on_gpu && engines > 1 && layout_flags.segmentation_layout_automatic()) {
    corpus::use_several_engines_layout(config);
  }
  if (device_numbers.empty() && engines > 1 && !on_gpu) {
    // Engines on the CPU share its cores.
    config.threads = std::max(1, config.threads / engines);
  }
  corpus::CorpusConfig corpus_config;
  corpus_config.decode_threads = jobs;
  corpus_config.clustering_threads = jobs;
  return std::make_unique<corpus::CorpusEngine>(
      models, corpus::engine_configs(config, device_numbers, engines), corpus_config);
}

void add_engine_layout_flags(CLI::App& command, std::string& devices, int& engines, int& jobs) {
  command.add_option("--devices", devices,
                     "GPUs to spread recordings over, one model set each: 0,1,... or all");
  command
      .add_option("--engines", engines,
                  "model sets per device (or on the CPU) taking recordings from one queue "
                  "(default: on a GPU up to 3, one per 16 GiB of free memory; 1 on the CPU)")
      ->check(number_at_least(1));  // the bound depends on the device: make_corpus_engine
  command
      .add_option("--jobs", jobs,
                  "with several recordings: how many are decoded, and clustered, at once")
      ->check(number_between(1, kMaxJobs))
      ->capture_default_str();
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
  // A file named twice is diarized once; the run goes on (every shard drops the same ones).
  std::vector<RepeatedRecording> repeats;
  std::vector<fs::path> once = without_repeats(recordings, &repeats);
  for (const auto& repeat : repeats) {
    spdlog::warn("{} is listed twice (also as {}); diarizing it once",
                 recordings[repeat.repeat].string(), recordings[repeat.first].string());
  }
  return once;
}

namespace {

// The end of a linked run: the speakers of every recording held in `held` linked (and named
// from the library), each result written with its global labels (to its file under `out_dir`,
// else into `texts`), and the speakers table. A result that cannot be written counts as failed.
void write_linked(std::vector<std::optional<corpus::RecordingOutcome>>& held,
                  const std::vector<corpus::CorpusRecording>& inputs,
                  const std::vector<Destination>& destinations,
                  const std::vector<std::string>& fingerprints,
                  const nlohmann::ordered_json& settings, const ResultNamer& namer,
                  const DiarizationFlags& flags, const std::string& out_dir,
                  const std::string& table_path, const OutputOptions& output_options,
                  std::vector<std::optional<std::string>>& texts, std::size_t& failed,
                  std::size_t& diarized) {
  std::vector<std::size_t> order;  // the input index of each linked recording
  std::vector<identity::RecordingSpeakers> speakers;
  for (std::size_t k = 0; k < held.size(); ++k) {
    if (!held[k]) continue;
    order.push_back(k);
    speakers.push_back(identity::recording_speakers(*held[k]->result));
    speakers.back().recording = inputs[k].uri;
  }
  identity::Linking linking = identity::link_speakers(speakers, namer.threshold());
  identity::name_linked_speakers(linking, namer.candidates());
  for (std::size_t i = 0; i < order.size(); ++i) {
    const std::size_t k = order[i];
    corpus::RecordingOutcome& outcome = *held[k];
    try {
      const std::string text = format_linked(*outcome.result, linking, i, flags);
      if (out_dir.empty()) {
        texts[k] = text;
        continue;
      }
      write_file_atomically(destinations[k].output, text, output_options);
      write_file_atomically(
          destinations[k].record,
          record_text(inputs[k], destinations[k], text, fingerprints[k], settings, outcome));
    } catch (const Error& error) {
      spdlog::error("{}: {}", inputs[k].audio.string(), error.what());
      ++failed;
      --diarized;
    }
  }
  write_output(identity::speakers_table(linking), table_path, output_options);
}

}  // namespace

void run_corpus(const std::vector<fs::path>& audio, const CorpusFlags& corpus,
                const DiarizationFlags& flags, const EngineFlags& engine,
                const std::string& out_dir, const IdentityFlags& identity) {
  const auto start = std::chrono::steady_clock::now();
  // Warnings from deep in the pipeline name the recording they are about (core/log_subject.h).
  show_log_subjects(*spdlog::default_logger());
  const std::string format = flags.format.empty() ? "rttm" : flags.format;
  if (format == "srt" || format == "vtt") {
    fail(
        "--format {} writes a speaker-labelled transcript, one recording at a time with "
        "--transcript or --asr-cmd; for many recordings use rttm, json or txt",
        format);
  }
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
  // Names come from the whole list, so that every shard names a recording alike.
  const std::vector<std::string> names = unique_output_names(audio);
  const Shard shard = corpus.shard.empty() ? Shard{} : Shard::parse(corpus.shard);

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
  std::vector<corpus::CorpusRecording> inputs;
  std::vector<double> durations;
  std::size_t listed = 0;
  std::size_t failed = 0;
  double longest = 0.0;
  for (std::size_t i = 0; i < audio.size(); ++i) {
    if (!shard.holds(i)) continue;
    ++listed;
    try {
      const auto duration = audio::open_audio_source(audio[i])->info().duration_seconds();
      longest = std::max(longest, duration.value_or(0.0));
      durations.push_back(duration.value_or(0.0));
      inputs.push_back({audio[i], names[i], {}, {}});
    } catch (const Error& error) {
      progress.note(fmt::format("parley: {}", error.what()));
      ++failed;
    }
  }

  if (longest * kSampleRate > static_cast<double>(audio::DecodedAudio::kDefaultSpillSamples)) {
    static_cast<void>(temporary_folder());  // where the samples of the longest will go
  }
  const pipeline::DiarizationModels paths = resolve_models(engine, flags);
  pipeline::DiarizationConfig config = diarization_config(engine, flags, longest);
  const ModelProviders providers = model_providers(paths, config);
  nlohmann::ordered_json settings = run_settings(config, paths, providers, flags.exclusive);
  settings["format"] = format;
  // The library is read (and checked against the embedding model) before any model loads.
  const ResultNamer namer(identity, paths.embedding);
  if (namer.naming()) settings["voiceprints"] = namer.settings();
  if (linking) settings["link_speakers"] = {{"threshold", identity.threshold}};

  // A rerun skips what an earlier run finished with the same settings and audio.
  std::vector<Destination> destinations;
  std::vector<std::string> fingerprints;
  std::size_t skipped = 0;
  if (!out_dir.empty()) {
    std::vector<corpus::CorpusRecording> remaining;
    std::vector<double> remaining_durations;
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      const Destination destination(out_dir, inputs[k].uri, format);
      const std::string fingerprint =
          eval::settings_fingerprint(file_settings(settings, inputs[k].audio));
      // Linking needs every recording's speakers, so a linked run diarizes them all again.
      if (!linking && finished_earlier(destination, fingerprint)) {
        ++skipped;
        continue;
      }
      remaining.push_back(inputs[k]);
      remaining_durations.push_back(durations[k]);
      destinations.push_back(destination);
      fingerprints.push_back(fingerprint);
    }
    inputs = std::move(remaining);
    durations = std::move(remaining_durations);
    if (skipped > 0) {
      say(
          fmt::format("{} of {} recordings were finished by an earlier run with the same "
                      "settings: skipped",
                      skipped, listed));
    }
  }

  // Each file still to write, before any model loads (one finished earlier is left alone, even
  // when read-only).
  for (const Destination& destination : destinations) {
    check_output_file("--out-dir", destination.output.string(), output_options);
  }

  std::size_t diarized = 0;
  double audio_seconds = 0.0;
  double run_seconds = 0.0;
  if (!inputs.empty()) {
    models::warn_if_speed_twin(paths.embedding);
    const auto corpus_engine = make_corpus_engine(paths, config, providers, engine.model_providers,
                                                  corpus.devices, corpus.engines, corpus.jobs);

    // Without --out-dir the RTTM goes out in input order, each as soon as those before it are.
    std::vector<std::optional<std::string>> texts(inputs.size());
    // Linked: every result waits for the end of the run (speaker turns and centroids: small).
    std::vector<std::optional<corpus::RecordingOutcome>> held(linking ? inputs.size() : 0);
    std::size_t next_to_print = 0;
    const std::size_t failed_before = failed;
    const auto run_start = std::chrono::steady_clock::now();
    progress.begin("recordings", inputs.size());
    corpus_engine->run(inputs, [&](corpus::RecordingOutcome outcome) {
      const std::size_t k = outcome.index;
      if (outcome.ok() && linking) {
        ++diarized;
        audio_seconds += outcome.result->duration_seconds;
        held[k] = std::move(outcome);
        progress.update(diarized + failed - failed_before);
        return;
      }
      if (outcome.ok() && !out_dir.empty()) {
        // A result that cannot be written (a full disk, a name the file system refuses) fails
        // that recording alone, like a model error.
        try {
          const std::string text = namer.format(*outcome.result, flags);
          write_file_atomically(destinations[k].output, text, output_options);
          write_file_atomically(
              destinations[k].record,
              record_text(inputs[k], destinations[k], text, fingerprints[k], settings, outcome));
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
    if (linking) {
      write_linked(held, inputs, destinations, fingerprints, settings, namer, flags, out_dir,
                   table_path, output_options, texts, failed, diarized);
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
