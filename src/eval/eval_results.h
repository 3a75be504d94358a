#pragma once
// Results of `parley eval`: one record per recording (accuracy and speed), totals over the set,
// the table people read and the JSON that scripts, `--compare` and `--plot` read. The JSON schema
// ("parley-eval/2") is documented in docs/eval.md; other systems (the peer harness) write the
// same schema so their points land on the same chart.
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/stage_timer.h"
#include "eval/der.h"

namespace parley::eval {

// Version 2 replaced "rtf" (which held audio seconds per wall second) with "real_time_factor" (wall
// seconds per audio second, lower is faster, as peers and papers use it) and "speed" (its inverse).
inline constexpr const char* kEvalSchema = "parley-eval/2";

// Processing seconds per audio second (0.2 = five times faster than real time; lower is faster),
// the real-time factor as sherpa-onnx, pyannote and the NIST evaluations report it; 0 without
// audio.
inline double real_time_factor(double audio_seconds, double wall_seconds) {
  return audio_seconds > 0.0 ? wall_seconds / audio_seconds : 0.0;
}
// Audio seconds per wall-clock second, "x real time" (5 = five times faster; higher is faster);
// 0 without time.
inline double speed(double audio_seconds, double wall_seconds) {
  return wall_seconds > 0.0 ? audio_seconds / wall_seconds : 0.0;
}

struct EvalFileResult {
  std::string uri;
  std::string audio;
  bool ok = false;
  std::string error;  // why the recording failed (ok == false)
  ErrorTimes scores;  // seconds, as score_file computes them
  double audio_seconds = 0.0;
  double wall_seconds = 0.0;  // decoding + diarization
  StageTimes stage_seconds;
  std::size_t speakers = 0;
  std::string fingerprint;  // of the settings and audio that produced the hypothesis
  bool resumed = false;     // taken from an earlier run instead of diarized again

  double real_time_factor() const {
    return parley::eval::real_time_factor(audio_seconds, wall_seconds);
  }
  double speed() const { return parley::eval::speed(audio_seconds, wall_seconds); }
};

// Sums over the recordings that were scored: error seconds over reference seconds (as md-eval
// and `parley score` total), audio seconds over wall seconds. Not means of per-file ratios.
struct EvalTotals {
  std::size_t files = 0;
  std::size_t failed = 0;
  ErrorTimes scores;
  double audio_seconds = 0.0;
  double wall_seconds = 0.0;
  StageTimes stage_seconds;

  double real_time_factor() const {
    return parley::eval::real_time_factor(audio_seconds, wall_seconds);
  }
  double speed() const { return parley::eval::speed(audio_seconds, wall_seconds); }
};

struct EvalRun {
  std::string system;               // label on charts ("parley step 2 vbx cpu")
  nlohmann::ordered_json settings;  // what produced the hypotheses (corpus::run_settings)
  ScoringOptions scoring;
  bool uem = false;  // whether UEMs gave the scored regions
  // The embedding model was the speed twin (random weights): timings hold, DER does not.
  bool speed_twin = false;
  std::vector<EvalFileResult> files;
};

EvalTotals eval_totals(const std::vector<EvalFileResult>& files);

// "step: 1 -> 2" for every top-level key whose value differs (or exists in one only).
std::vector<std::string> changed_settings(const nlohmann::json& before, const nlohmann::json& now);

nlohmann::ordered_json file_result_json(const EvalFileResult& result);
// Reads what file_result_json wrote; fails naming `source` when a field is missing.
EvalFileResult file_result_from_json(const nlohmann::ordered_json& json, const std::string& source);

nlohmann::ordered_json eval_run_json(const EvalRun& run);

// One system's point for charts, from an eval JSON document (this tool's or a peer's).
struct SystemSummary {
  std::string system;
  double der = 0.0;    // fraction
  double speed = 0.0;  // x real time
  double audio_seconds = 0.0;
  StageTimes stage_seconds;  // totals over the set
  bool speed_twin = false;   // see EvalRun::speed_twin
};
SystemSummary system_summary(const EvalRun& run);
// Reads "system" and "total" of an eval JSON file; fails naming the file and field otherwise.
SystemSummary read_system_summary(const std::filesystem::path& path);

// Settings line, one row per recording (DER, missed, false alarm, confusion in percent, speech,
// audio and wall seconds, speed), a TOTAL row, then one line per failed recording.
std::string format_eval_table(const EvalRun& run);

}  // namespace parley::eval
