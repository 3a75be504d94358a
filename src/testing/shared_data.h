#pragma once
// Tests read models, recordings and goldens from ../shared (see shared/README.md). Without the
// shared folder a test that needs it is skipped, so the suite runs on a bare checkout. With the
// folder present (as in CI) a missing file is a failure: a renamed or deleted file must not turn
// the tests that read it into silent no-ops.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace parley::testing {

// The shared folder: $PARLEY_SHARED_DIR if set, else the path configured at build time.
std::filesystem::path shared_dir();

struct SharedLookup {
  enum class Outcome { kFound, kNoSharedFolder, kMissingFile };
  Outcome outcome = Outcome::kNoSharedFolder;
  std::filesystem::path path;  // absolute, set when found
  std::string message;         // why not found, set otherwise
};

// Looks up `relative` below `root`.
SharedLookup find_shared_in(const std::filesystem::path& root, const std::string& relative);

// Looks up `relative` below shared_dir().
SharedLookup find_shared(const std::string& relative);

}  // namespace parley::testing

// Resolves `relative` below ../shared into `var`; skips the current test when the shared folder
// is absent and fails it when the folder is there but the file is not.
#define PARLEY_REQUIRE_SHARED(var, relative)                                                     \
  const ::parley::testing::SharedLookup var##_lookup = ::parley::testing::find_shared(relative); \
  if (var##_lookup.outcome == ::parley::testing::SharedLookup::Outcome::kNoSharedFolder) {       \
    GTEST_SKIP() << var##_lookup.message;                                                        \
  }                                                                                              \
  if (var##_lookup.outcome == ::parley::testing::SharedLookup::Outcome::kMissingFile) {          \
    FAIL() << var##_lookup.message;                                                              \
  }                                                                                              \
  const std::filesystem::path var = var##_lookup.path

// For the few files ../shared does not hold by design (the real WeSpeaker model, which users
// download): resolves `relative` into `var`, or skips the current test whenever it is absent.
#define PARLEY_REQUIRE_OPTIONAL_SHARED(var, relative)                                            \
  const ::parley::testing::SharedLookup var##_lookup = ::parley::testing::find_shared(relative); \
  if (var##_lookup.outcome != ::parley::testing::SharedLookup::Outcome::kFound) {                \
    GTEST_SKIP() << "optional shared file '" << (relative)                                       \
                 << "' absent: " << var##_lookup.message;                                        \
  }                                                                                              \
  const std::filesystem::path var = var##_lookup.path
