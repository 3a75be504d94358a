#pragma once
// The run of a face into an output folder, one recording at a time: which recordings an earlier
// run finished (skipped), and each result written in every requested format, with or without
// overlap, beside its record (corpus/run_record.h). `parley diarize --out-dir`, the C API's
// parley_batch_submit_to (and through it Python and parley.distributed) all write through it, so
// that what one face writes another skips, whatever the format or `exclusive`.
#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/error.h"
#include "corpus/run_record.h"
#include "pipeline/diarizer.h"

namespace parley::corpus {

// What a run writes into its folder.
struct OutDirRequest {
  std::filesystem::path out_dir;
  // Each a result_format_names() entry, written side by side (<name>.<format>, a record each).
  std::vector<std::string> formats{"rttm"};
  // The one-speaker-at-a-time turns in rttm, txt, srt and vtt (json holds both).
  bool exclusive = false;
  OutputOptions output_options;
};

// Where one recording goes: one PlannedRecording per format of the request.
struct PlannedOutputs {
  std::vector<PlannedRecording> formats;
  // Every format was finished by an earlier run with the same settings: nothing to diarize.
  bool finished() const;
};

class OutDirWriter {
 public:
  // A result's text in one format; `format_result` with the request's `exclusive` by default.
  // A face that names or links speakers passes its own.
  using Formatter =
      std::function<std::string(const pipeline::DiarizationResult&, const std::string& format)>;

  // `settings`: the run's run_settings() (plus what else a face adds, e.g. a speaker library);
  // its "exclusive" is the request's, so that a record never claims other turns than it holds.
  // Fails, naming the configuration field, on an unknown format or no format at all. The folder
  // is made on the first write.
  OutDirWriter(OutDirRequest request, nlohmann::ordered_json settings);

  const OutDirRequest& request() const { return request_; }
  const nlohmann::ordered_json& settings() const { return settings_; }

  // `name`'s destinations (corpus::unique_output_names gives a list's names) and whether an
  // earlier run finished them all.
  PlannedOutputs plan(const std::string& name, const std::filesystem::path& audio) const;

  // `result` in each format of `planned`, each output then its record written atomically.
  // Throws parley::Error when one cannot be written (a full disk, a refused name): that
  // recording fails alone.
  void write(const PlannedOutputs& planned, const pipeline::DiarizationResult& result,
             double wall_seconds, const Formatter& formatter = {}) const;

  // The text format_result makes of `result` in `format` with this request's `exclusive`.
  std::string format(const pipeline::DiarizationResult& result, const std::string& format) const;

 private:
  OutDirRequest request_;
  nlohmann::ordered_json settings_;
};

// The outputs a run has handed out, and to which recording: two recordings writing one file would
// silently keep only the last one's result. A face that takes recordings one at a time with
// names of its caller's choosing (parley_batch_submit_to) claims each recording's outputs before
// it queues it; a list planned whole (corpus/run_plan.h) has names that never clash.
// Two recordings would write one output: the face says how its caller names them apart.
class OutputClash : public Error {
 public:
  using Error::Error;
};

class OutputClaims {
 public:
  // Claims every output of `planned` for recording `index` (`audio`). Throws OutputClash, naming
  // both recordings and the file, when an earlier claim holds one of them; nothing is claimed
  // then.
  void claim(const PlannedOutputs& planned, std::size_t index, const std::filesystem::path& audio);

 private:
  // The absolute, lexically normal output path -> the index and audio path that claimed it.
  std::map<std::string, std::pair<std::size_t, std::string>> claimed_;
};

}  // namespace parley::corpus
