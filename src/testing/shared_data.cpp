#include "testing/shared_data.h"

#include <cstdlib>

namespace parley::testing {

std::filesystem::path shared_dir() {
  if (const char* env = std::getenv("PARLEY_SHARED_DIR"); env != nullptr && *env != '\0') {
    return std::filesystem::path(env);
  }
  return std::filesystem::path(PARLEY_DEFAULT_SHARED_DIR);
}

SharedLookup find_shared_in(const std::filesystem::path& root, const std::string& relative) {
  std::error_code ec;
  if (!std::filesystem::is_directory(root, ec)) {
    return {SharedLookup::Outcome::kNoSharedFolder,
            {},
            "shared folder " + root.string() +
                " not found: skipped (set PARLEY_SHARED_DIR to run the tests that need it)"};
  }
  const auto path = std::filesystem::weakly_canonical(root / relative, ec);
  if (ec || !std::filesystem::exists(path, ec)) {
    return {SharedLookup::Outcome::kMissingFile,
            {},
            "'" + relative + "' not found under the shared folder " + root.string() +
                ": restore it, or update the test if it was renamed"};
  }
  return {SharedLookup::Outcome::kFound, path, {}};
}

SharedLookup find_shared(const std::string& relative) {
  return find_shared_in(shared_dir(), relative);
}

}  // namespace parley::testing
