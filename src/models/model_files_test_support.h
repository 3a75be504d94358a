#pragma once
// Helpers shared by the models module's tests.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace parley::models::testing {

inline void write_text(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

inline std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream stream(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(stream), std::istreambuf_iterator<char>()};
}

}  // namespace parley::models::testing
