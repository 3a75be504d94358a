#include "models/model_locator.h"

#include <algorithm>
#include <cstdlib>
#include <system_error>

#include <fmt/format.h>

#include "core/error.h"
#include "core/executable_path.h"

namespace parley::models {

namespace {

std::optional<std::string> environment(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

bool is_existing_file(const std::filesystem::path& path) {
  std::error_code error;
  return std::filesystem::is_regular_file(path, error);
}

}  // namespace

std::filesystem::path user_cache_models_dir() {
  if (auto cache = environment("XDG_CACHE_HOME")) {
    return std::filesystem::path(*cache) / "parley" / "models";
  }
  if (auto home = environment("HOME")) {
    return std::filesystem::path(*home) / ".cache" / "parley" / "models";
  }
  return {};
}

std::filesystem::path executable_models_dir() {
  const std::filesystem::path folder = executable_folder();
  return folder.empty() ? folder : folder / "models";
}

std::vector<SearchPlace> builtin_search_places() {
  // Set by src/models/CMakeLists.txt: share/parley/models relative to the install's bin/ and
  // lib/ folders, and this build tree's models folder.
  std::vector<SearchPlace> places;
  if (auto beside = executable_models_dir(); !beside.empty()) {
    places.push_back({beside, "beside the executable", false});
  }
  if (const auto folder = executable_folder(); !folder.empty()) {
    places.push_back(
        {(folder / PARLEY_BIN_TO_MODELS).lexically_normal(), "installed with parley", false});
  }
  if (const auto folder = code_folder(); !folder.empty()) {
    places.push_back(
        {(folder / PARLEY_LIB_TO_MODELS).lexically_normal(), "installed with parley", false});
  }
  places.push_back({PARLEY_BUILD_TREE_MODELS, "build tree", false});
  return places;
}

std::vector<SearchPlace> default_search_places(
    const std::optional<std::filesystem::path>& models_flag,
    const std::vector<SearchPlace>& builtin) {
  std::vector<SearchPlace> places;
  std::error_code error;
  if (models_flag && !models_flag->empty()) {
    if (!std::filesystem::is_directory(*models_flag, error)) {
      fail("the models folder '{}' (models_dir) does not exist; check the path, or create it",
           models_flag->string());
    }
    places.push_back({*models_flag, "models_dir"});
  }
  if (auto from_environment = environment("PARLEY_MODELS")) {
    places.push_back({*from_environment, "$PARLEY_MODELS"});
  }
  // A folder named by the flag or the variable must not be completed silently by the models a
  // build left in a built-in folder (the speed twin, say): those serve only when none is named.
  const bool folder_named = !places.empty();
  if (auto cache = user_cache_models_dir(); !cache.empty()) {
    places.push_back({cache, "per-user cache"});
  }
  if (folder_named) return places;
  // The built-in folders often coincide (build/parley's `models` is its build tree's); each is
  // searched, and listed in messages, once.
  std::vector<std::filesystem::path> seen;
  for (const SearchPlace& place : builtin) {
    if (place.dir.empty() || !std::filesystem::is_directory(place.dir, error)) continue;
    const std::filesystem::path canonical = std::filesystem::canonical(place.dir, error);
    if (error) continue;
    if (std::find(seen.begin(), seen.end(), canonical) != seen.end()) continue;
    seen.push_back(canonical);
    places.push_back(place);
  }
  return places;
}

ModelLocator::ModelLocator(const Registry& registry, std::vector<SearchPlace> places)
    : registry_(&registry), places_(std::move(places)) {}

ModelLocator::ModelLocator(const Registry& registry,
                           const std::optional<std::filesystem::path>& models_flag)
    : ModelLocator(registry, default_search_places(models_flag)) {}

std::optional<LocatedModel> ModelLocator::find(const ModelEntry& entry) const {
  for (const auto& place : places_) {
    auto candidate = place.dir / entry.file;
    if (is_existing_file(candidate)) return LocatedModel{&entry, candidate, &place};
  }
  return std::nullopt;
}

std::optional<LocatedModel> ModelLocator::find(Role role) const {
  const auto entries = registry_->for_role(role);
  for (const auto& place : places_) {
    for (const ModelEntry* entry : entries) {
      auto candidate = place.dir / entry->file;
      if (is_existing_file(candidate)) return LocatedModel{entry, candidate, &place};
    }
  }
  return std::nullopt;
}

LocatedModel ModelLocator::locate(Role role) const {
  if (auto found = find(role)) return *found;
  std::vector<std::string> files;
  for (const ModelEntry* entry : registry_->for_role(role)) files.push_back(entry->file);
  std::vector<std::string> searched;
  for (const auto& place : places_) {
    searched.push_back(fmt::format("{} ({})", place.dir.string(), place.origin));
  }
  if (files.empty()) {
    fail("the model registry {} has no '{}' model", registry_->source_name(), role_name(role));
  }
  fail(
      "no {} model found: looked for {} in {}; run `parley models fetch --role {}` (or pass "
      "models_dir / set PARLEY_MODELS to a folder that has it)",
      role_name(role), fmt::join(files, " or "),
      searched.empty() ? std::string("no folder (models_dir, PARLEY_MODELS and HOME are unset)")
                       : fmt::format("{}", fmt::join(searched, ", ")),
      role_name(role));
}

std::filesystem::path ModelLocator::fetch_dir() const {
  for (const auto& place : places_) {
    if (place.takes_fetches) return place.dir;
  }
  fail("no folder to put models in: set models_dir or PARLEY_MODELS (HOME is unset)");
}

}  // namespace parley::models
