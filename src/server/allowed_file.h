#pragma once
// A server file a client names instead of uploading (form field 'path'), opened once and checked
// on the open descriptor: the file it is, after every link, must be a regular file inside the
// allowed folder. Readers then open the descriptor's /proc/self/fd path, so swapping a name for
// a link after the check changes nothing they read.
#include <filesystem>
#include <optional>
#include <string>

namespace parley::server {

class OpenedFile {
 public:
  explicit OpenedFile(int descriptor) : descriptor_(descriptor) {}
  ~OpenedFile();
  OpenedFile(OpenedFile&& other) noexcept : descriptor_(other.descriptor_) {
    other.descriptor_ = -1;
  }
  OpenedFile& operator=(OpenedFile&&) = delete;
  OpenedFile(const OpenedFile&) = delete;
  OpenedFile& operator=(const OpenedFile&) = delete;

  // /proc/self/fd/N: this open file, whatever happens to its names.
  std::filesystem::path path() const;

 private:
  int descriptor_;
};

enum class AllowedFileCheck { kInside, kOutside, kMissing };

struct AllowedFile {
  AllowedFileCheck check = AllowedFileCheck::kMissing;
  std::optional<OpenedFile> file;  // set when inside
  std::filesystem::path resolved;  // the file's real path, when inside
};

// Opens `path` (absolute, or relative to `root`) without blocking (a FIFO is refused, not
// waited on) and checks what was opened.
AllowedFile open_allowed_file(const std::filesystem::path& root, const std::filesystem::path& path);

}  // namespace parley::server
