#pragma once
// A folder of one's own for each test: ctest -j runs tests as separate processes at once, so a
// fixed path under /tmp would be written by several of them together.
#include <filesystem>
#include <string>

namespace parley::testing {

// A fresh, uniquely named folder under the system temp folder, removed with everything in it on
// destruction.
class TemporaryDirectory {
 public:
  // `label` only makes the folder recognisable when a crashed test leaves it behind.
  explicit TemporaryDirectory(const std::string& label = "test");
  ~TemporaryDirectory();
  TemporaryDirectory(const TemporaryDirectory&) = delete;
  TemporaryDirectory& operator=(const TemporaryDirectory&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

}  // namespace parley::testing
