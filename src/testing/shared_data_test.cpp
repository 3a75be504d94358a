#include "testing/shared_data.h"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>

#include "testing/temporary_directory.h"

namespace parley::testing {
namespace {

using Outcome = SharedLookup::Outcome;

TEST(FindShared, NoSharedFolderIsASkip) {
  const TemporaryDirectory temp("shared-absent");
  const auto lookup = find_shared_in(temp / "no-shared-here", "models/any.onnx");
  EXPECT_EQ(lookup.outcome, Outcome::kNoSharedFolder);
  EXPECT_TRUE(lookup.path.empty());
  EXPECT_NE(lookup.message.find("PARLEY_SHARED_DIR"), std::string::npos) << lookup.message;
}

TEST(FindShared, MissingFileUnderAnExistingFolderIsAFailure) {
  const TemporaryDirectory shared("shared-fake");
  const auto lookup = find_shared_in(shared.path(), "models/renamed.onnx");
  EXPECT_EQ(lookup.outcome, Outcome::kMissingFile);
  EXPECT_TRUE(lookup.path.empty());
  EXPECT_NE(lookup.message.find("models/renamed.onnx"), std::string::npos) << lookup.message;
}

TEST(FindShared, FoundFileHasItsAbsolutePath) {
  const TemporaryDirectory shared("shared-fake");
  std::filesystem::create_directories(shared / "models");
  std::ofstream(shared / "models" / "present.onnx") << "x";
  const auto lookup = find_shared_in(shared.path(), "models/present.onnx");
  EXPECT_EQ(lookup.outcome, Outcome::kFound);
  EXPECT_EQ(lookup.path, std::filesystem::canonical(shared / "models" / "present.onnx"));
}

// Points PARLEY_SHARED_DIR somewhere else for one scope.
class SharedDirOverride {
 public:
  explicit SharedDirOverride(const std::filesystem::path& dir) {
    if (const char* old = std::getenv("PARLEY_SHARED_DIR")) previous_ = old;
    ::setenv("PARLEY_SHARED_DIR", dir.c_str(), 1);
  }
  ~SharedDirOverride() {
    if (previous_) {
      ::setenv("PARLEY_SHARED_DIR", previous_->c_str(), 1);
    } else {
      ::unsetenv("PARLEY_SHARED_DIR");
    }
  }
  SharedDirOverride(const SharedDirOverride&) = delete;
  SharedDirOverride& operator=(const SharedDirOverride&) = delete;

 private:
  std::optional<std::string> previous_;
};

// What a test body does with the macro: resolves the file or returns early.
void body_needing_a_renamed_file() {
  PARLEY_REQUIRE_SHARED(model, "models/renamed.onnx");
  ADD_FAILURE() << "the macro let the test go on without " << model;
}

TEST(RequireShared, FailsTheTestWhenTheSharedFolderExistsButTheFileDoesNot) {
  const TemporaryDirectory shared("shared-fake");
  const SharedDirOverride override_dir(shared.path());
  EXPECT_FATAL_FAILURE(body_needing_a_renamed_file(), "models/renamed.onnx");
}

}  // namespace
}  // namespace parley::testing
