#include "models/model_verifier.h"

#include <system_error>

#include <fmt/format.h>

#include "core/error.h"
#include "core/npz.h"
#include "core/sha256.h"

namespace parley::models {

namespace {

std::vector<std::string> names_of(const std::vector<graph::OnnxTensorInfo>& tensors) {
  std::vector<std::string> names;
  for (const auto& tensor : tensors) names.push_back(tensor.name);
  return names;
}

std::vector<std::string> names_of(const std::vector<TensorSpec>& tensors) {
  std::vector<std::string> names;
  for (const auto& tensor : tensors) names.push_back(tensor.name);
  return names;
}

void compare_tensors(const char* kind, const std::vector<TensorSpec>& expected,
                     const std::vector<graph::OnnxTensorInfo>& actual,
                     std::vector<std::string>& problems) {
  if (expected.size() != actual.size()) {
    problems.push_back(fmt::format("expected {} {}s ({}), the model has {} ({})", expected.size(),
                                   kind, fmt::join(names_of(expected), ", "), actual.size(),
                                   fmt::join(names_of(actual), ", ")));
  }
  const std::size_t common = std::min(expected.size(), actual.size());
  for (std::size_t index = 0; index < common; ++index) {
    const TensorSpec& want = expected[index];
    const graph::OnnxTensorInfo& have = actual[index];
    if (want.name != have.name) {
      problems.push_back(fmt::format("{} {}: expected name '{}', the model has '{}'", kind, index,
                                     want.name, have.name));
    }
    if (want.element_type != have.element_type) {
      problems.push_back(fmt::format("{} '{}': expected element type {}, the model has {}", kind,
                                     have.name, want.element_type, have.element_type));
    }
    if (want.shape.size() != have.shape.size()) {
      problems.push_back(fmt::format("{} '{}': expected rank {} {}, the model has rank {} {}", kind,
                                     have.name, want.shape.size(), want.shape_string(),
                                     have.shape.size(), have.shape_string()));
      continue;
    }
    for (std::size_t axis = 0; axis < want.shape.size(); ++axis) {
      const auto& dimension = want.shape[axis];
      if (dimension.fixed && have.shape[axis] >= 0 && have.shape[axis] != *dimension.fixed) {
        problems.push_back(fmt::format("{} '{}' axis {}: expected size {} {}, the model has {} {}",
                                       kind, have.name, axis, *dimension.fixed, want.shape_string(),
                                       have.shape[axis], have.shape_string()));
      }
    }
  }
}

std::uintmax_t file_size_or_zero(const std::filesystem::path& path) {
  std::error_code error;
  auto size = std::filesystem::file_size(path, error);
  return error ? 0 : size;
}

}  // namespace

std::vector<std::string> compare_signature(const ModelEntry& entry,
                                           const graph::OnnxModelInfo& model) {
  std::vector<std::string> problems;
  compare_tensors("input", entry.inputs, model.inputs, problems);
  compare_tensors("output", entry.outputs, model.outputs, problems);
  return problems;
}

std::string repair_hint(const ModelEntry& entry) {
  if (entry.speed_twin) {
    return fmt::format("regenerate it with `/usr/bin/python3 {} --output DIR/{}`", entry.generator,
                       entry.file);
  }
  return fmt::format("delete it and run `parley models fetch --id {}`", entry.id);
}

Verification verify_model_file(const ModelEntry& entry, const std::filesystem::path& path) {
  Verification result;
  result.entry = &entry;
  result.path = path;
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    result.problems.push_back(
        fmt::format("{} does not exist or is not a file; {}", path.string(), repair_hint(entry)));
    return result;
  }

  const auto size = file_size_or_zero(path);
  if (entry.size && size != *entry.size) {
    result.problems.push_back(
        fmt::format("size: expected {} bytes, the file has {}", *entry.size, size));
  }
  result.actual_sha256 = sha256_file(path);
  if (!entry.sha256) {
    result.notes.emplace_back("unknown checksum, skipped (the registry records no sha256)");
  } else if (result.actual_sha256 != *entry.sha256) {
    result.problems.push_back(fmt::format(
        "sha256 mismatch: expected {}, actual {} (the file is damaged, truncated or another "
        "version); {}",
        *entry.sha256, result.actual_sha256, repair_hint(entry)));
  }

  try {
    if (entry.format == FileFormat::kOnnx) {
      const graph::OnnxModelInfo model = graph::inspect_onnx_model(path);
      for (auto& problem : compare_signature(entry, model)) {
        result.problems.push_back(fmt::format("signature: {}", problem));
      }
      auto twin = model.metadata.find("parley.speed_twin");
      if (twin != model.metadata.end() && twin->second == "true") {
        result.notes.emplace_back("speed twin: random weights, no speaker knowledge");
      }
    } else {
      const NpzArchive archive = read_npz(path);
      for (const auto& name : entry.arrays) {
        if (!archive.contains(name)) {
          std::vector<std::string> present;
          for (const auto& [key, array] : archive) present.push_back(key);
          result.problems.push_back(fmt::format("array '{}' is missing (the archive has: {})", name,
                                                fmt::join(present, ", ")));
        }
      }
    }
  } catch (const Error& open_error) {
    result.problems.push_back(open_error.what());
  }
  return result;
}

}  // namespace parley::models
