#include "models/model_locator.h"

#include <cstdlib>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.h"
#include "models/model_files_test_support.h"
#include "testing/temporary_directory.h"

namespace parley::models {
namespace {

using parley::testing::TemporaryDirectory;
using ::testing::HasSubstr;
using testing::write_text;

// Sets or unsets an environment variable for one test and restores it afterwards.
class ScopedEnvironment {
 public:
  ScopedEnvironment(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) saved_ = old;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnvironment() {
    if (saved_) {
      setenv(name_, saved_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

 private:
  const char* name_;
  std::optional<std::string> saved_;
};

TEST(ModelLocator, SearchOrderIsFlagThenEnvironmentThenUserCache) {
  parley::testing::TemporaryDirectory flag_dir("flag");
  parley::testing::TemporaryDirectory executable_models("beside");
  ScopedEnvironment models("PARLEY_MODELS", "/from/env");
  ScopedEnvironment cache("XDG_CACHE_HOME", "/xdg/cache");
  // A named folder (flag or variable) leaves out the models beside the executable.
  const std::vector<SearchPlace> builtin = {
      {executable_models.path(), "beside the executable", false}};
  const auto places = default_search_places(flag_dir.path(), builtin);
  ASSERT_EQ(places.size(), 3u);
  EXPECT_EQ(places[0].dir, flag_dir.path());
  EXPECT_EQ(places[0].origin, "models_dir");
  EXPECT_EQ(places[1].dir, "/from/env");
  EXPECT_EQ(places[1].origin, "$PARLEY_MODELS");
  EXPECT_EQ(places[2].dir, "/xdg/cache/parley/models");
  EXPECT_EQ(places[2].origin, "per-user cache");
  EXPECT_EQ(default_search_places(std::nullopt, builtin).size(), 2u);
}

TEST(ModelLocator, AMissingModelsFlagFolderIsAnError) {
  parley::testing::TemporaryDirectory parent("parent");
  try {
    default_search_places(parent / "typo");
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_THAT(error.what(),
                HasSubstr("'" + (parent / "typo").string() + "' (models_dir) does not exist"));
  }
}

TEST(ModelLocator, BuiltInFoldersAreLastOnceEachAndNeverReceiveFetches) {
  parley::testing::TemporaryDirectory executable_models("beside");
  parley::testing::TemporaryDirectory installed_models("installed");
  ScopedEnvironment models("PARLEY_MODELS", nullptr);
  ScopedEnvironment cache("XDG_CACHE_HOME", "/xdg/cache");
  const std::vector<SearchPlace> builtin = {
      {executable_models.path(), "beside the executable", false},
      {installed_models / "absent", "installed with parley", false},
      {installed_models.path(), "installed with parley", false},
      // The same folder again, by another spelling (build/parley's models are its build tree's).
      {executable_models / ".." / executable_models.path().filename(), "build tree", false}};
  const ModelLocator locator(Registry::builtin(), default_search_places(std::nullopt, builtin));
  // Absent folders are not searched (nor listed in error messages), nor the same one twice.
  ASSERT_EQ(locator.places().size(), 3u);
  EXPECT_EQ(locator.places()[1].dir, executable_models.path());
  EXPECT_EQ(locator.places()[2].dir, installed_models.path());
  EXPECT_EQ(locator.fetch_dir(), "/xdg/cache/parley/models");
  write_text(installed_models / "segmentation-3.0-fp16.onnx", "s");
  auto found = locator.find(Role::kSegmentation);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->place->origin, "installed with parley");
  write_text(executable_models / "segmentation-3.0-fp16.onnx", "s");
  found = locator.find(Role::kSegmentation);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->place->origin, "beside the executable");
}

TEST(ModelLocator, BuiltInFoldersAreBesideTheProgramInstalledAndTheBuildTree) {
  EXPECT_EQ(executable_models_dir().filename(), "models");
  EXPECT_TRUE(std::filesystem::exists(executable_models_dir().parent_path() / "models_test"));
  const auto places = builtin_search_places();
  ASSERT_EQ(places.size(), 4u);
  EXPECT_EQ(places[0].dir, executable_models_dir());
  // This test program is not installed: bin/../share/parley/models seen from its folder.
  const auto installed =
      executable_models_dir().parent_path().parent_path() / "share" / "parley" / "models";
  EXPECT_EQ(places[1].dir, installed);
  EXPECT_EQ(places[1].origin, "installed with parley");
  // The code is linked into the test program, so the library's folder is the program's.
  EXPECT_EQ(places[2].dir, places[1].dir);
  EXPECT_EQ(places[3].origin, "build tree");
  EXPECT_EQ(places[3].dir.filename(), "models");
  // build/src/models/models_test: the build tree is two folders up.
  std::error_code error;
  EXPECT_EQ(std::filesystem::weakly_canonical(places[3].dir.parent_path(), error),
            std::filesystem::weakly_canonical(executable_models_dir().parent_path() / ".." / "..",
                                              error));
  for (const auto& place : places) EXPECT_FALSE(place.takes_fetches) << place.dir;
}

TEST(ModelLocator, UserCacheFallsBackToHomeAndUnsetVariablesAreSkipped) {
  ScopedEnvironment models("PARLEY_MODELS", "");
  ScopedEnvironment cache("XDG_CACHE_HOME", nullptr);
  ScopedEnvironment home("HOME", "/home/someone");
  const auto places = default_search_places(std::nullopt, {});
  ASSERT_EQ(places.size(), 1u);
  EXPECT_EQ(places[0].dir, "/home/someone/.cache/parley/models");
  EXPECT_EQ(user_cache_models_dir(), "/home/someone/.cache/parley/models");
}

class LocatorFolders : public ::testing::Test {
 protected:
  TemporaryDirectory flag_dir{"flag"};
  TemporaryDirectory env_dir{"env"};
  TemporaryDirectory cache_dir{"cache"};
  std::vector<SearchPlace> places() const {
    return {{flag_dir.path(), "models_dir"},
            {env_dir.path(), "$PARLEY_MODELS"},
            {cache_dir.path(), "per-user cache"}};
  }
};

TEST_F(LocatorFolders, EarlierFolderWins) {
  const Registry& registry = Registry::builtin();
  const ModelLocator locator(registry, places());
  write_text(cache_dir / "segmentation-3.0.onnx", "c");
  write_text(env_dir / "segmentation-3.0.onnx", "e");
  auto found = locator.find(Role::kSegmentation);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->path, env_dir / "segmentation-3.0.onnx");
  EXPECT_EQ(found->place->origin, "$PARLEY_MODELS");

  write_text(flag_dir / "segmentation-3.0-fp16.onnx", "f");
  found = locator.find(Role::kSegmentation);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->entry->id, "segmentation-3.0-fp16");
  EXPECT_EQ(found->place->origin, "models_dir");
  EXPECT_EQ(locator.fetch_dir(), flag_dir.path());
}

TEST_F(LocatorFolders, WithinAFolderTheRealModelBeatsTheSpeedTwin) {
  const ModelLocator locator(Registry::builtin(), places());
  write_text(env_dir / "resnet34-speed-twin.onnx", "twin");
  auto found = locator.find(Role::kEmbedding);
  ASSERT_TRUE(found);
  EXPECT_TRUE(found->entry->speed_twin);

  write_text(env_dir / "voxceleb_resnet34_LM.onnx", "real");
  found = locator.find(Role::kEmbedding);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->entry->id, "wespeaker-resnet34-lm");
}

TEST_F(LocatorFolders, FilesInSubfoldersAreFound) {
  const ModelLocator locator(Registry::builtin(), places());
  write_text(cache_dir / "plda" / "plda.npz", "x");
  const auto found = locator.locate(Role::kPlda);
  EXPECT_EQ(found.path, cache_dir / "plda" / "plda.npz");
}

TEST_F(LocatorFolders, MissingModelErrorListsPlacesAndTheFetchCommand) {
  const ModelLocator locator(Registry::builtin(), places());
  try {
    locator.locate(Role::kEmbedding);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_THAT(message, HasSubstr("no embedding model found"));
    EXPECT_THAT(message, HasSubstr("voxceleb_resnet34_LM.onnx or resnet34-speed-twin.onnx"));
    EXPECT_THAT(message, HasSubstr(flag_dir.path().string() + " (models_dir)"));
    EXPECT_THAT(message, HasSubstr(env_dir.path().string() + " ($PARLEY_MODELS)"));
    EXPECT_THAT(message, HasSubstr(cache_dir.path().string() + " (per-user cache)"));
    EXPECT_THAT(message, HasSubstr("parley models fetch --role embedding"));
  }
}

TEST(ModelLocator, NoPlacesAtAll) {
  const ModelLocator locator(Registry::builtin(), std::vector<SearchPlace>{});
  EXPECT_FALSE(locator.find(Role::kSegmentation));
  EXPECT_THROW(locator.fetch_dir(), Error);
}

}  // namespace
}  // namespace parley::models
