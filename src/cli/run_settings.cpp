#include "cli/run_settings.h"

#include <regex>
#include <system_error>

#include "core/sha256.h"

namespace parley::cli {

nlohmann::ordered_json run_settings(const pipeline::DiarizationConfig& config,
                                    const pipeline::DiarizationModels& models,
                                    const ModelProviders& providers, bool exclusive) {
  // Neither the thread count nor streaming changes the output; the automatic segmentation batch
  // follows the threads but gives the same bits from 2 to 8 chunks per call.
  pipeline::DiarizationConfig same_output = config;
  same_output.threads = 1;
  const std::string pipeline_text = std::regex_replace(
      same_output.to_string(), std::regex("threads=[0-9]+, |, streaming=(true|false)"), "");
  const auto hash_or_absent = [](const std::filesystem::path& path) {
    std::error_code error;
    return std::filesystem::exists(path, error) ? sha256_file(path) : std::string("absent");
  };
  return {{"step", config.step_seconds},
          {"clustering", config.clustering.describe()},
          {"speakers", config.speakers.describe()},
          {"embedding_mode", std::string(pipeline::embedding_mode_name(config.embedding_mode))},
          {"providers", providers.describe()},
          {"exclusive", exclusive},
          {"pipeline", pipeline_text},
          {"segmentation_model", hash_or_absent(models.segmentation)},
          {"embedding_model", hash_or_absent(models.embedding)},
          {"plda", hash_or_absent(models.plda / "plda.npz") + " " +
                       hash_or_absent(models.plda / "xvec_transform.npz")}};
}

nlohmann::ordered_json file_settings(const nlohmann::ordered_json& settings,
                                     const std::filesystem::path& audio) {
  nlohmann::ordered_json with_audio = settings;
  std::error_code error;
  with_audio["audio"] = std::filesystem::absolute(audio).string();
  with_audio["audio_bytes"] = std::filesystem::file_size(audio, error);
  const auto modified = std::filesystem::last_write_time(audio, error);
  with_audio["audio_modified"] = static_cast<long long>(modified.time_since_epoch().count());
  return with_audio;
}

}  // namespace parley::cli
