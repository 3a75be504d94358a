#pragma once
// Checks a model file against its registry entry: size, sha256, and for ONNX files the
// input/output signature as ONNX Runtime reads it (names, element types, ranks, fixed axes);
// for npz files the arrays it must hold. Every problem becomes one sentence a user can act on.
#include <filesystem>
#include <string>
#include <vector>

#include "graph/onnx_inspect.h"
#include "models/registry.h"

namespace parley::models {

struct Verification {
  const ModelEntry* entry = nullptr;
  std::filesystem::path path;
  std::string actual_sha256;
  std::vector<std::string> problems;  // empty: the file is what the registry describes
  std::vector<std::string> notes;     // facts that are not failures ("unknown checksum, skipped")

  bool passed() const { return problems.empty(); }
};

Verification verify_model_file(const ModelEntry& entry, const std::filesystem::path& path);

// The signature half of verify_model_file: one message per difference between what the entry
// declares and what the model has. A dynamic axis in the model matches any declared size.
std::vector<std::string> compare_signature(const ModelEntry& entry,
                                           const graph::OnnxModelInfo& model);

// What to run to replace a bad or missing file of this entry.
std::string repair_hint(const ModelEntry& entry);

}  // namespace parley::models
