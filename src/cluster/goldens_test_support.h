#pragma once
// Test-only access to the pyannote community-1 goldens (../shared/goldens/pyannote-community1)
// and the speakrs pipeline fixtures (../shared/goldens/speakrs).
#include <filesystem>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "core/ndarray.h"
#include "core/npz.h"

namespace parley::cluster::testing {

// Fixture folders under `root` that hold both segmentations.npz and raw_embeddings.npz.
inline std::vector<std::filesystem::path> clustering_fixtures(const std::filesystem::path& root) {
  std::vector<std::filesystem::path> folders;
  for (const auto& entry : std::filesystem::directory_iterator(root)) {
    if (entry.is_directory() && std::filesystem::exists(entry.path() / "segmentations.npz") &&
        std::filesystem::exists(entry.path() / "raw_embeddings.npz")) {
      folders.push_back(entry.path());
    }
  }
  std::sort(folders.begin(), folders.end());
  return folders;
}

inline Eigen::MatrixXd to_matrix(const NdArray<double>& array) {
  const std::size_t rows = array.dim(0);
  const std::size_t cols = array.rank() > 1 ? array.size() / rows : 1;
  Eigen::MatrixXd matrix(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols));
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      matrix(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(c)) = array(r * cols + c);
    }
  }
  return matrix;
}

inline Eigen::MatrixXd npz_matrix(const std::filesystem::path& file, const std::string& key) {
  return to_matrix(npz_get(read_npz(file), key, file).as<double>());
}

inline Eigen::VectorXd npz_vector(const std::filesystem::path& file, const std::string& key) {
  const NdArray<double> values = npz_get(read_npz(file), key, file).as<double>();
  return Eigen::Map<const Eigen::VectorXd>(values.data(), static_cast<Eigen::Index>(values.size()));
}

inline std::vector<int> npy_labels(const std::filesystem::path& file) {
  const NdArray<std::int64_t> values = read_npy(file).as<std::int64_t>();
  return {values.values().begin(), values.values().end()};
}

}  // namespace parley::cluster::testing
