#pragma once
// SHA-256 of files and text: model verification and content-addressed caches key on it.
#include <filesystem>
#include <string>
#include <string_view>

namespace parley {

// Lower-case hex digest of a file, read in blocks (models can be hundreds of megabytes).
std::string sha256_file(const std::filesystem::path& path);
std::string sha256_text(std::string_view text);

}  // namespace parley
