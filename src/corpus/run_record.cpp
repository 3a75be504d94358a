#include "corpus/run_record.h"

#include <chrono>
#include <ctime>
#include <fstream>
#include <map>
#include <mutex>
#include <system_error>

#include <fmt/format.h>

#include "core/sha256.h"
#include "core/text.h"
#include "pipeline/network_placement.h"

namespace parley::corpus {
namespace fs = std::filesystem;

std::string describe_providers(runtime::ProviderId segmentation, runtime::ProviderId embedding) {
  if (segmentation == embedding) return std::string(runtime::provider_name(embedding));
  return fmt::format("segmentation {}, embedding {}", runtime::provider_name(segmentation),
                     runtime::provider_name(embedding));
}

pipeline::DiarizationConfig fingerprinted_placement(pipeline::DiarizationConfig config,
                                                    double longest_audio_seconds) {
  if (config.placement) {
    config.placement->expected_audio_seconds = pipeline::ProviderPlacement{}.expected_audio_seconds;
    config.placement->longest_audio_seconds = longest_audio_seconds;
  }
  return config;
}

std::string describe_providers(const pipeline::DiarizationModels& models,
                               const pipeline::DiarizationConfig& config) {
  const pipeline::ModelSessionPlan plan = pipeline::plan_model_sessions(models, config);
  return describe_providers(plan.segmentation.provider, plan.embedding.session.provider);
}

ModelDigests model_digests(const pipeline::DiarizationModels& models) {
  const auto hash_or_absent = [](const fs::path& path) {
    std::error_code error;
    return fs::exists(path, error) ? sha256_file(path) : std::string("absent");
  };
  return {hash_or_absent(models.segmentation), hash_or_absent(models.embedding),
          hash_or_absent(models.plda / "plda.npz") + " " +
              hash_or_absent(models.plda / "xvec_transform.npz")};
}

nlohmann::ordered_json run_settings(const pipeline::OutputSettings& output,
                                    const ModelDigests& models, std::string_view providers,
                                    bool exclusive) {
  // The output settings at the top (in their sorted order), so that a record's settings name
  // each one: `parley eval` says which changed since an earlier run.
  const nlohmann::json fields = output.to_json();
  nlohmann::ordered_json settings = nlohmann::ordered_json::object();
  for (auto field = fields.begin(); field != fields.end(); ++field) {
    settings[field.key()] = field.value();
  }
  settings["providers"] = std::string(providers);
  settings["exclusive"] = exclusive;
  settings["segmentation_model"] = models.segmentation;
  settings["embedding_model"] = models.embedding;
  settings["plda"] = models.plda;
  return settings;
}

nlohmann::ordered_json cached_run_settings(const pipeline::DiarizationModels& models,
                                           const pipeline::DiarizationConfig& config) {
  static std::mutex mutex;
  static std::map<std::string, nlohmann::ordered_json> cache;
  std::string key = config.to_string();
  for (const auto& path : {models.segmentation, models.embedding, models.plda / "plda.npz",
                           models.plda / "xvec_transform.npz"}) {
    std::error_code error;
    const auto size = fs::file_size(path, error);
    const auto modified = fs::last_write_time(path, error);
    key += fmt::format("\n{} {} {}", path.string(), size, modified.time_since_epoch().count());
  }
  {
    std::lock_guard lock(mutex);
    if (const auto found = cache.find(key); found != cache.end()) return found->second;
  }
  nlohmann::ordered_json settings = run_settings(config.output(), model_digests(models),
                                                 describe_providers(models, config), false);
  std::lock_guard lock(mutex);
  return cache.emplace(key, std::move(settings)).first->second;
}

std::string utc_timestamp(fs::file_time_type time) {
  using namespace std::chrono;
  const auto since_epoch = file_clock::to_sys(time).time_since_epoch();
  const auto whole = floor<seconds>(since_epoch);
  const auto nanoseconds_part = duration_cast<nanoseconds>(since_epoch - whole).count();
  const std::time_t seconds_part = static_cast<std::time_t>(whole.count());
  std::tm parts{};
  if (gmtime_r(&seconds_part, &parts) == nullptr) return "unknown";
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:09}Z", parts.tm_year + 1900,
                     parts.tm_mon + 1, parts.tm_mday, parts.tm_hour, parts.tm_min, parts.tm_sec,
                     nanoseconds_part);
}

nlohmann::ordered_json file_settings(const nlohmann::ordered_json& settings,
                                     const fs::path& audio) {
  nlohmann::ordered_json with_audio = settings;
  std::error_code error;
  fs::path absolute = fs::absolute(audio, error);
  if (error) absolute = audio;
  // A file name need not be UTF-8; a record must be (nlohmann::json refuses to write it else).
  with_audio["audio"] = utf8_or_escaped(absolute.string());
  with_audio["audio_bytes"] = fs::file_size(audio, error);
  const auto modified = fs::last_write_time(audio, error);
  with_audio["audio_modified"] = error ? std::string("unknown") : utc_timestamp(modified);
  return with_audio;
}

std::string settings_fingerprint(const nlohmann::ordered_json& settings) {
  // Text that is not UTF-8 (a file name) must not make the fingerprint throw; valid text dumps
  // the same bytes either way.
  return sha256_text(
      settings.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
}

std::filesystem::path records_folder(const std::filesystem::path& out_dir) {
  return out_dir / kRecordsFolderName;
}

RunDestination::RunDestination(const fs::path& out_dir, const std::string& name,
                               const std::string& format)
    : output(out_dir / (name + "." + format)),
      record(records_folder(out_dir) / (name + "." + format + ".json")) {}

std::optional<nlohmann::json> finished_record(const RunDestination& destination,
                                              const std::string& fingerprint) {
  std::error_code error;
  if (!fs::is_regular_file(destination.output, error) ||
      !fs::is_regular_file(destination.record, error)) {
    return std::nullopt;
  }
  try {
    std::ifstream stream(destination.record);
    nlohmann::json record = nlohmann::json::parse(stream);
    if (record.value("fingerprint", std::string()) == fingerprint &&
        record.value("output_sha256", std::string()) == sha256_file(destination.output)) {
      return record;
    }
  } catch (const std::exception&) {
    // Unreadable: made again.
  }
  return std::nullopt;
}

PlannedRecording plan_recording(const fs::path& out_dir, const std::string& name,
                                const std::string& format, const nlohmann::ordered_json& settings,
                                const fs::path& audio) {
  nlohmann::ordered_json with_format = settings;
  with_format["format"] = format;
  PlannedRecording planned{
      RunDestination(out_dir, name, format), file_settings(with_format, audio), {}, false};
  planned.fingerprint = settings_fingerprint(planned.settings);
  if (const auto record = finished_record(planned.destination, planned.fingerprint)) {
    planned.finished = true;
    const auto seconds = record->find("audio_seconds");
    if (seconds != record->end() && seconds->is_number()) {
      planned.audio_seconds = seconds->get<double>();
    }
  }
  return planned;
}

nlohmann::ordered_json make_record(const PlannedRecording& planned, std::string_view output_text,
                                   const pipeline::DiarizationResult& result, double wall_seconds) {
  nlohmann::ordered_json record = {
      {"audio", planned.settings.value("audio", std::string())},
      {"output", utf8_or_escaped(planned.destination.output.filename().string())},
      {"output_sha256", sha256_text(output_text)},
      {"fingerprint", planned.fingerprint},
      {"audio_seconds", result.duration_seconds},
      {"speakers", result.speaker_count},
      {"turns", result.turns.size()},
      {"wall_seconds", wall_seconds},
      {"stage_seconds", nlohmann::ordered_json::object()},
      {"settings", planned.settings}};
  for (const auto& [stage, seconds] : result.stage_times.entries()) {
    record["stage_seconds"][stage] = seconds;
  }
  return record;
}

void write_result(const RunDestination& destination, std::string_view output_text,
                  const nlohmann::ordered_json& record, const OutputOptions& options) {
  std::error_code error;
  fs::create_directories(destination.record.parent_path(), error);
  write_file_atomically(destination.output, output_text, options);
  write_file_atomically(
      destination.record,
      record.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n", options);
}

}  // namespace parley::corpus
