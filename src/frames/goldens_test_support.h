#pragma once
// Test-only helpers: loading the pyannote goldens of ../shared (see shared/README.md).
//   goldens/pyannote-community1/NN_name/: segmentations.npz, clustering.npz,
//     reconstruction.npz, reference.rttm (pyannote.audio 4.0.4, community-1)
//   goldens/speakrs/<case>_*: pyannote's hook artefacts (segmentation, speaker_counting,
//     discrete_diarization with their sliding windows as JSON) and RTTMs with 6 decimals.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/npz.h"
#include "frames/sliding_window.h"

namespace parley::frames::testing {

// The community-1 golden folders holding the frame-level intermediates.
inline std::vector<std::filesystem::path> community1_cases(const std::filesystem::path& root) {
  std::vector<std::filesystem::path> cases;
  for (const auto& entry : std::filesystem::directory_iterator(root)) {
    if (entry.is_directory() && std::filesystem::exists(entry.path() / "reconstruction.npz") &&
        std::filesystem::exists(entry.path() / "segmentations.npz") &&
        std::filesystem::exists(entry.path() / "clustering.npz")) {
      cases.push_back(entry.path());
    }
  }
  std::sort(cases.begin(), cases.end());
  return cases;
}

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream stream(path, std::ios::binary);
  std::stringstream content;
  content << stream.rdbuf();
  return content.str();
}

// {"start": ..., "duration": ..., "step": ...} as the speakrs fixture generator saved them.
inline SlidingWindow read_window_json(const std::filesystem::path& path) {
  const auto json = nlohmann::json::parse(read_text(path));
  return SlidingWindow(json.at("start").get<double>(), json.at("duration").get<double>(),
                       json.at("step").get<double>());
}

inline NdArray<int> npz_int(const NpzArchive& archive, const std::string& key,
                            const std::filesystem::path& source) {
  return npz_get(archive, key, source).as<int>();
}

inline NdArray<float> npz_float(const NpzArchive& archive, const std::string& key,
                                const std::filesystem::path& source) {
  return npz_get(archive, key, source).as<float>();
}

inline double npz_scalar(const NpzArchive& archive, const std::string& key,
                         const std::filesystem::path& source) {
  return npz_get(archive, key, source).as<double>().values().at(0);
}

// Flattens an [N, 1] or [N] array.
inline std::vector<int> flat(const NdArray<int>& array) { return array.values(); }

}  // namespace parley::frames::testing
