#pragma once
// The plan of a run over a list of recordings, for every face that runs one (`parley diarize`,
// the C API's parley_corpus_plan_json, and through it Python and parley.distributed): each file
// once (a repeat left out, with the rule of without_repeats), an output name for each over the
// whole list (unique_output_names), one shard of the list, and, for a run into a folder, each
// recording's outputs and records and whether an earlier run finished them with these settings
// (OutDirWriter::plan). A face only hands out what the plan says is left to do.
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "audio/decoded_audio.h"
#include "corpus/out_dir_writer.h"
#include "corpus/recording_list.h"
#include "pipeline/diarizer.h"

namespace parley::corpus {

struct PlannedRun {
  struct Recording {
    std::size_t index = 0;  // position in the list given, repeats included
    std::filesystem::path audio;
    std::string name;        // its output name (unique over the whole list)
    PlannedOutputs outputs;  // one per format; none before plan_outputs
    // What probe_recordings found: the length its header states (0: not stated, or not probed),
    // or why it could not be opened (that recording fails alone).
    double duration_seconds = 0.0;
    std::string unopened{};
    // Every format finished by an earlier run with the same settings.
    bool finished() const { return outputs.finished(); }
    // Seconds of audio its record says (0 when not finished).
    double audio_seconds() const;
  };
  std::vector<RepeatedRecording> repeats;  // positions in the list given
  std::vector<Recording> recordings;       // of the shard, in list order

  std::size_t finished_count() const;
  // The longest duration_seconds (0: none known).
  double longest_seconds() const;

  // {"recordings": [{"index", "audio", "name", "finished", "audio_seconds",
  //   "outputs": [{"format", "output", "record", "finished"}]}],
  //  "repeats": [{"index", "first"}]}: indices into the list given.
  nlohmann::ordered_json describe() const;
};

// `listed` with each file once, named over the whole list, the recordings of `shard`; no outputs
// planned. Fails when two distinct paths cannot be given distinct names (unique_output_names).
PlannedRun plan_run(const std::vector<std::filesystem::path>& listed, const Shard& shard = {});

// Each recording of `plan`'s outputs in `writer`'s folder, and whether they are finished.
void plan_outputs(PlannedRun& plan, const OutDirWriter& writer);

// The two above: the whole plan of a run of `listed` into `writer`'s folder.
PlannedRun plan_run(const std::vector<std::filesystem::path>& listed, const OutDirWriter& writer,
                    const Shard& shard = {});

// Refuses a recording of `audio_seconds` that a run of `config` cannot hold, before any work on
// it: one whose chunks would not fit in memory at the step until clustering ends
// (pipeline::check_step_fits), or one longer than `spill_samples` (decoded into a temporary file,
// audio/decoded_audio.h) while the temporary folder is unusable (temporary_folder() says what to
// do). `spill_samples` 0: nothing spills (samples already in memory). 0 seconds: nothing known,
// nothing checked.
void check_recording_fits(const pipeline::DiarizationConfig& config, double audio_seconds,
                          std::size_t spill_samples = audio::DecodedAudio::kDefaultSpillSamples);

// Opens each recording of `plan` (its header only) before any model is found or loaded: sets its
// duration_seconds, or `unopened` when it cannot be opened. Then refuses the whole list (fails,
// naming the longest recording) when a run of `config` cannot hold its longest recording
// (check_recording_fits): a setting or the machine is wrong, and every long recording would fail.
void probe_recordings(PlannedRun& plan, const pipeline::DiarizationConfig& config);

// `document` as JSON text in which strings keep their bytes: well-formed UTF-8 as it is, every
// other byte as \udcNN (the lone surrogate U+DC00 + NN, which no UTF-8 text holds: Python's
// surrogateescape, so json.loads then os.fsencode give a file name's bytes back). For file names
// a caller must pass back byte for byte (paths, output names); nlohmann::json's own dump would
// throw on them or replace their bytes.
std::string json_keeping_bytes(const nlohmann::ordered_json& document);

}  // namespace parley::corpus
