#pragma once
// A private folder under the system's temporary directory that is removed with everything in it
// when the object goes out of scope, so no error path leaves it behind.
#include <filesystem>
#include <string>

namespace parley {

// The folder temporary files go to: $TMPDIR, else /tmp (std::filesystem::temp_directory_path).
// Fails saying what to do when TMPDIR names something that is not an existing folder (the
// library's own "filesystem error: temp_directory_path" says neither which nor what to do), or
// when the folder is not writable.
std::filesystem::path temporary_folder();

class TemporaryDirectory {
 public:
  // Creates <temporary_folder()>/<prefix>XXXXXX with mode 0700 (mkdtemp: a fresh name, never an
  // existing folder).
  explicit TemporaryDirectory(const std::string& prefix);
  ~TemporaryDirectory();
  TemporaryDirectory(const TemporaryDirectory&) = delete;
  TemporaryDirectory& operator=(const TemporaryDirectory&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

}  // namespace parley
