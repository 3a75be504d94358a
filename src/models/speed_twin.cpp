#include "models/speed_twin.h"

#include <fmt/format.h>

#include "graph/onnx_inspect.h"

namespace parley::models {

bool is_speed_twin(const std::filesystem::path& model) {
  const auto metadata = graph::model_metadata(model);
  const auto found = metadata.find(kSpeedTwinMetadataKey);
  return found != metadata.end() && found->second == "true";
}

std::string speed_twin_warning(const std::filesystem::path& model) {
  return fmt::format(
      "WARNING: {} is a speed twin with random weights: speaker labels are meaningless. "
      "Download the real model with `parley models fetch`.",
      model.string());
}

bool warn_if_speed_twin(const std::filesystem::path& model, std::FILE* stream) {
  if (!is_speed_twin(model)) return false;
  // Framed so that it stands out in a scrolling log: the output looks plausible otherwise.
  const std::string rule(78, '!');
  fmt::print(stream, "{}\n{}\n{}\n", rule, speed_twin_warning(model), rule);
  std::fflush(stream);
  return true;
}

}  // namespace parley::models
