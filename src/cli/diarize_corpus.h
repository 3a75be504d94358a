#pragma once
// `parley diarize` over many recordings: the command line's translation of the corpus engine
// (corpus/corpus_engine.h), its layout (corpus/engine_layout.h) and resumable runs
// (corpus/run_record.h). Each recording's result is written as soon as it is done (atomically,
// under --out-dir), a recording that fails fails alone, and a rerun of the same command skips
// what an earlier run (of any face) finished with the same settings.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli/diarization_options.h"
#include "cli/identity_options.h"
#include "corpus/engine_layout.h"
#include "pipeline/option_table.h"

namespace parley::cli {

struct CorpusFlags {
  std::vector<std::string> manifests;       // --manifest: recordings listed in files
  std::string shard;                        // --shard K/N: this job's part of the list
  int jobs = pipeline::kDefaultCorpusJobs;  // recordings decoded, and clustered, at once
  std::string devices;                      // --devices 0,1 | all: one engine set per GPU
  int engines = 0;                          // engines per device (or on the CPU); 0: automatic
  std::string trace;                        // --trace FILE: the run's trace (CorpusConfig)
};

void add_corpus_flags(CLI::App& command, CorpusFlags& flags);

// Makes `parley COMMAND a.wav -- -dash.wav` work for a command whose files are one positional
// list: CLI11 2.1 hands a `--` that follows some files to the parent command, where it is an
// error, once every positional option has had its minimum. A hidden positional that never gets
// anything (the files all go to the list before it) keeps the `--` in `command`; `unused` holds
// it.
void accept_files_after_double_dash(CLI::App& command, std::string& unused);

// --devices, --engines and --jobs, with their bounds: how a corpus engine is laid out (the
// commands that run one: diarize and serve).
void add_engine_layout_flags(CLI::App& command, std::string& devices, int& engines, int& jobs);

// `values` (table_values of the engine's flags) with --devices, --engines and --jobs by the
// table's names: what corpus::layout_request reads, as the C API's and Python's values are.
nlohmann::json with_layout_values(nlohmann::json values, const std::string& devices, int engines,
                                  int jobs);

// `values` with --trace by the table's name, when given: what corpus::layout_request reads.
nlohmann::json with_trace_value(nlohmann::json values, const std::string& trace);

// Whether these flags ask for the corpus engine even with one recording.
bool wants_corpus(const CorpusFlags& flags);

// The recordings named on the command line and in --manifest files, in that order (a file named
// twice too: run_corpus plans the run, which leaves repeats out).
std::vector<std::filesystem::path> corpus_recordings(const std::vector<std::string>& audio,
                                                     const CorpusFlags& flags);

// Diarizes `audio` through the corpus engine, as corpus::plan_run plans it (each file once, the
// shard, what an earlier run finished): with `out_dir`, one <name>.<format> per recording
// there and a record of its settings in <out_dir>/.parley/ (what a rerun checks); without, RTTM
// of every recording in input order to flags.out. Fails after the run, saying how many, when any
// recording failed. `identity`: speakers named from a library (each result as it comes), or
// linked across the recordings (every result held until the run ends, then written with the
// global labels, and the speakers table; nothing is skipped as done by an earlier run).
void run_corpus(const std::vector<std::filesystem::path>& audio, const CorpusFlags& corpus,
                const DiarizationFlags& flags, const EngineFlags& engine,
                const std::string& out_dir, const IdentityFlags& identity = {});

}  // namespace parley::cli
