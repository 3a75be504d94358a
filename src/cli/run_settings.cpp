#include "cli/run_settings.h"

#include <chrono>
#include <ctime>
#include <system_error>

#include <fmt/format.h>

#include "core/sha256.h"
#include "core/text.h"

namespace parley::cli {

nlohmann::ordered_json run_settings(const pipeline::DiarizationConfig& config,
                                    const pipeline::DiarizationModels& models,
                                    const ModelProviders& providers, bool exclusive) {
  const auto hash_or_absent = [](const std::filesystem::path& path) {
    std::error_code error;
    return std::filesystem::exists(path, error) ? sha256_file(path) : std::string("absent");
  };
  // Only what changes the output: config.execution() (threads, batches, sessions, streaming,
  // devices) is left out, so that a rerun with other speed settings resumes.
  return {{"output", config.output().to_json()},
          {"providers", providers.describe()},
          {"exclusive", exclusive},
          {"segmentation_model", hash_or_absent(models.segmentation)},
          {"embedding_model", hash_or_absent(models.embedding)},
          {"plda", hash_or_absent(models.plda / "plda.npz") + " " +
                       hash_or_absent(models.plda / "xvec_transform.npz")}};
}

std::string utc_timestamp(std::filesystem::file_time_type time) {
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
                                     const std::filesystem::path& audio) {
  nlohmann::ordered_json with_audio = settings;
  std::error_code error;
  std::filesystem::path absolute = std::filesystem::absolute(audio, error);
  if (error) absolute = audio;
  // A file name need not be UTF-8; a record must be (nlohmann::json refuses to write it else).
  with_audio["audio"] = utf8_or_escaped(absolute.string());
  with_audio["audio_bytes"] = std::filesystem::file_size(audio, error);
  const auto modified = std::filesystem::last_write_time(audio, error);
  with_audio["audio_modified"] = error ? std::string("unknown") : utc_timestamp(modified);
  return with_audio;
}

}  // namespace parley::cli
