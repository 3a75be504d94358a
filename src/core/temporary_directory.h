#pragma once
// A private folder under the system's temporary directory that is removed with everything in it
// when the object goes out of scope, so no error path leaves it behind.
#include <filesystem>
#include <string>

namespace parley {

class TemporaryDirectory {
 public:
  // Creates <temp>/<prefix>XXXXXX with mode 0700 (mkdtemp: a fresh name, never an existing folder).
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
