#include "eval/eval_results.h"

#include <algorithm>
#include <fstream>
#include <set>

#include <fmt/format.h>

#include "core/error.h"

namespace parley::eval {
namespace {

nlohmann::ordered_json stages_json(const StageTimes& times) {
  nlohmann::ordered_json stages = nlohmann::ordered_json::object();
  for (const auto& [stage, seconds] : times.entries()) stages[stage] = seconds;
  return stages;
}

// Stages keep the order they were written in (ordered_json), which is the order they ran.
StageTimes stages_from_json(const nlohmann::ordered_json& json) {
  StageTimes times;
  if (!json.is_object()) return times;
  for (const auto& [stage, seconds] : json.items()) {
    if (seconds.is_number()) times.add(stage, seconds.get<double>());
  }
  return times;
}

template <typename T, typename Json>
T field(const Json& json, const char* key, const std::string& source) {
  if (!json.contains(key)) fail("{}: missing field '{}'", source, key);
  try {
    return json.at(key).template get<T>();
  } catch (const nlohmann::json::exception&) {
    fail("{}: field '{}' has the wrong type", source, key);
  }
}

std::string settings_text(const ScoringOptions& scoring, bool uem) {
  return fmt::format(
      "collar {} s each side of reference boundaries, overlapped speech {}, {}", scoring.collar,
      scoring.skip_overlap ? "not scored" : "scored",
      uem ? "scored regions from the UEM" : "no UEM: scored from first to last turn");
}

}  // namespace

EvalTotals eval_totals(const std::vector<EvalFileResult>& files) {
  EvalTotals totals;
  for (const EvalFileResult& file : files) {
    ++totals.files;
    if (!file.ok) {
      ++totals.failed;
      continue;
    }
    totals.scores += file.scores;
    totals.audio_seconds += file.audio_seconds;
    totals.wall_seconds += file.wall_seconds;
    for (const auto& [stage, seconds] : file.stage_seconds.entries()) {
      totals.stage_seconds.add(stage, seconds);
    }
  }
  return totals;
}

std::vector<std::string> changed_settings(const nlohmann::json& before, const nlohmann::json& now) {
  std::vector<std::string> changes;
  std::set<std::string> keys;
  if (before.is_object())
    for (const auto& item : before.items()) keys.insert(item.key());
  if (now.is_object())
    for (const auto& item : now.items()) keys.insert(item.key());
  const auto text_of = [](const nlohmann::json& json, const std::string& key) {
    if (!json.is_object() || !json.contains(key)) return std::string("(none)");
    const auto& value = json.at(key);
    return value.is_string() ? value.get<std::string>() : value.dump();
  };
  for (const std::string& key : keys) {
    const bool in_before = before.is_object() && before.contains(key);
    const bool in_now = now.is_object() && now.contains(key);
    if (in_before && in_now && before.at(key) == now.at(key)) continue;
    std::string old_text = text_of(before, key);
    std::string new_text = text_of(now, key);
    // Long values (the pipeline description, hashes) differ in a small part: show that part
    // with a little context instead of the whole text.
    constexpr std::size_t kLong = 40;
    constexpr std::size_t kContext = 12;
    if (old_text.size() > kLong || new_text.size() > kLong) {
      std::size_t prefix = 0;
      while (prefix < old_text.size() && prefix < new_text.size() &&
             old_text[prefix] == new_text[prefix]) {
        ++prefix;
      }
      std::size_t suffix = 0;
      while (suffix < old_text.size() - prefix && suffix < new_text.size() - prefix &&
             old_text[old_text.size() - 1 - suffix] == new_text[new_text.size() - 1 - suffix]) {
        ++suffix;
      }
      const std::size_t start = prefix > kContext ? prefix - kContext : 0;
      const auto window = [&](const std::string& text) {
        const std::size_t end = std::min(text.size(), text.size() - suffix + kContext);
        return (start > 0 ? "..." : "") + text.substr(start, end - start) +
               (end < text.size() ? "..." : "");
      };
      old_text = window(old_text);
      new_text = window(new_text);
    }
    changes.push_back(fmt::format("{}: {} -> {}", key, old_text, new_text));
  }
  return changes;
}

nlohmann::ordered_json file_result_json(const EvalFileResult& result) {
  nlohmann::ordered_json json;
  json["uri"] = result.uri;
  json["audio"] = result.audio;
  json["status"] = result.ok ? "ok" : "failed";
  if (!result.ok) {
    json["error"] = result.error;
    return json;
  }
  json["der"] = result.scores.der();
  json["missed"] = result.scores.rate(result.scores.missed);
  json["false_alarm"] = result.scores.rate(result.scores.false_alarm);
  json["confusion"] = result.scores.rate(result.scores.confusion);
  json["total"] = result.scores.total;
  json["missed_seconds"] = result.scores.missed;
  json["false_alarm_seconds"] = result.scores.false_alarm;
  json["confusion_seconds"] = result.scores.confusion;
  json["audio_seconds"] = result.audio_seconds;
  json["wall_seconds"] = result.wall_seconds;
  json["real_time_factor"] = result.real_time_factor();
  json["speed"] = result.speed();
  json["stage_seconds"] = stages_json(result.stage_seconds);
  json["speakers"] = result.speakers;
  json["fingerprint"] = result.fingerprint;
  json["resumed"] = result.resumed;
  return json;
}

EvalFileResult file_result_from_json(const nlohmann::ordered_json& json,
                                     const std::string& source) {
  EvalFileResult result;
  result.uri = field<std::string>(json, "uri", source);
  result.audio = field<std::string>(json, "audio", source);
  result.ok = field<std::string>(json, "status", source) == "ok";
  if (!result.ok) {
    result.error = json.value("error", std::string("failed"));
    return result;
  }
  result.scores.missed = field<double>(json, "missed_seconds", source);
  result.scores.false_alarm = field<double>(json, "false_alarm_seconds", source);
  result.scores.confusion = field<double>(json, "confusion_seconds", source);
  result.scores.total = field<double>(json, "total", source);
  result.audio_seconds = field<double>(json, "audio_seconds", source);
  result.wall_seconds = field<double>(json, "wall_seconds", source);
  result.stage_seconds =
      stages_from_json(json.value("stage_seconds", nlohmann::ordered_json::object()));
  result.speakers = field<std::size_t>(json, "speakers", source);
  result.fingerprint = field<std::string>(json, "fingerprint", source);
  return result;
}

nlohmann::ordered_json eval_run_json(const EvalRun& run) {
  const EvalTotals totals = eval_totals(run.files);
  nlohmann::ordered_json json;
  json["schema"] = kEvalSchema;
  json["system"] = run.system;
  json["speed_twin"] = run.speed_twin;
  if (run.speed_twin) {
    json["warning"] =
        "the speaker-embedding model is the speed twin (random weights): the timings are real, "
        "the speaker labels and so the DER are not";
  }
  json["settings"] = run.settings;
  json["scoring"] = {
      {"collar", run.scoring.collar}, {"skip_overlap", run.scoring.skip_overlap}, {"uem", run.uem}};
  nlohmann::ordered_json files = nlohmann::ordered_json::array();
  for (const EvalFileResult& file : run.files) files.push_back(file_result_json(file));
  json["files"] = files;
  json["total"] = {{"files", totals.files},
                   {"scored", totals.files - totals.failed},
                   {"failed", totals.failed},
                   {"der", totals.scores.der()},
                   {"missed", totals.scores.rate(totals.scores.missed)},
                   {"false_alarm", totals.scores.rate(totals.scores.false_alarm)},
                   {"confusion", totals.scores.rate(totals.scores.confusion)},
                   {"total", totals.scores.total},
                   {"audio_seconds", totals.audio_seconds},
                   {"wall_seconds", totals.wall_seconds},
                   {"real_time_factor", totals.real_time_factor()},
                   {"speed", totals.speed()},
                   {"stage_seconds", stages_json(totals.stage_seconds)}};
  return json;
}

SystemSummary system_summary(const EvalRun& run) {
  const EvalTotals totals = eval_totals(run.files);
  SystemSummary summary;
  summary.system = run.system;
  summary.der = totals.scores.der();
  summary.speed = totals.speed();
  summary.audio_seconds = totals.audio_seconds;
  summary.stage_seconds = totals.stage_seconds;
  summary.speed_twin = run.speed_twin;
  return summary;
}

SystemSummary read_system_summary(const std::filesystem::path& path) {
  std::ifstream stream(path);
  if (!stream) fail("cannot open the system summary '{}'; check its path", path.string());
  nlohmann::ordered_json json;
  try {
    json = nlohmann::ordered_json::parse(stream);
  } catch (const nlohmann::json::exception& error) {
    fail("{}: not JSON ({})", path.string(), error.what());
  }
  const std::string source = path.string();
  if (!json.is_object() || !json.contains("total")) {
    fail(
        "{}: not an eval result (no 'total'); pass a JSON written by `parley eval` or the peer "
        "harness",
        source);
  }
  SystemSummary summary;
  summary.system = json.value("system", path.stem().string());
  summary.speed_twin = json.value("speed_twin", false);
  const nlohmann::ordered_json& total = json.at("total");
  const std::string total_source = source + " total";
  summary.der = field<double>(total, "der", total_source);
  summary.audio_seconds = total.value("audio_seconds", 0.0);
  if (total.contains("speed")) {
    summary.speed = field<double>(total, "speed", total_source);
  } else if (total.contains("real_time_factor")) {
    const double factor = field<double>(total, "real_time_factor", total_source);
    summary.speed = factor > 0.0 ? 1.0 / factor : 0.0;
  } else if (total.contains("wall_seconds")) {
    summary.speed =
        speed(summary.audio_seconds, field<double>(total, "wall_seconds", total_source));
  } else if (total.contains("rtf")) {
    fail(
        "{}: 'rtf' is ambiguous (parley-eval/1 wrote audio per wall second there); write 'speed' "
        "(audio seconds per wall second) or 'real_time_factor' (wall per audio second) instead",
        total_source);
  }
  summary.stage_seconds =
      stages_from_json(total.value("stage_seconds", nlohmann::ordered_json::object()));
  return summary;
}

std::string format_eval_table(const EvalRun& run) {
  std::size_t width = 5;
  for (const EvalFileResult& file : run.files) width = std::max(width, file.uri.size());
  std::string text = settings_text(run.scoring, run.uem) + "\n";
  text += fmt::format("{:<{}}  {:>6}  {:>7}  {:>12}  {:>10}  {:>10}  {:>9}  {:>8}  {:>6}\n", "file",
                      width, "DER%", "missed%", "false alarm%", "confusion%", "speech (s)",
                      "audio (s)", "wall (s)", "speed");
  const auto row = [&](const std::string& name, const ErrorTimes& scores, double audio, double wall,
                       const char* note) {
    return fmt::format(
        "{:<{}}  {:>6.2f}  {:>7.2f}  {:>12.2f}  {:>10.2f}  {:>10.2f}  {:>9.1f}  {:>8.2f}  "
        "{:>5.1f}x{}\n",
        name, width, 100.0 * scores.der(), 100.0 * scores.rate(scores.missed),
        100.0 * scores.rate(scores.false_alarm), 100.0 * scores.rate(scores.confusion),
        scores.total, audio, wall, speed(audio, wall), note);
  };
  std::string failures;
  for (const EvalFileResult& file : run.files) {
    if (!file.ok) {
      text += fmt::format("{:<{}}  {:>6}\n", file.uri, width, "failed");
      failures += fmt::format("failed: {}: {}\n", file.uri, file.error);
      continue;
    }
    text += row(file.uri, file.scores, file.audio_seconds, file.wall_seconds,
                file.resumed ? "  (earlier run)" : "");
  }
  const EvalTotals totals = eval_totals(run.files);
  text += row("TOTAL", totals.scores, totals.audio_seconds, totals.wall_seconds, "");
  if (totals.failed > 0) {
    text += fmt::format("{} of {} recordings failed:\n{}", totals.failed, totals.files, failures);
  }
  return text;
}

}  // namespace parley::eval
