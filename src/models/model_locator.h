#pragma once
// Finds model files on disk. Folders are searched in a fixed order: `--models DIR` (models_dir),
// then $PARLEY_MODELS, then the per-user cache `${XDG_CACHE_HOME:-~/.cache}/parley/models`, then,
// when neither the flag nor the variable named a folder, the folders parley itself brings models
// in (builtin_search_places: build/models beside build/parley, where scripts/prepare-models puts
// them, for the command, the library and the Python package of a build tree; share/parley/models
// of an installed prefix): a fresh checkout or install works without flags, and models a user
// fetched or pointed at win over those. Within a folder a role's entries are tried in the
// registry's preference order (default first, speed twin last). `parley models fetch` writes into
// the first of the folders before the built-in ones.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "models/registry.h"

namespace parley::models {

struct SearchPlace {
  std::filesystem::path dir;
  // "models_dir", "$PARLEY_MODELS", "per-user cache", or a built-in folder's origin ("beside the
  // executable", "installed with parley", "build tree")
  std::string origin;
  // Whether `parley models fetch` may write here; not the built-in folders, which an install may
  // not let users write and a rebuild may wipe.
  bool takes_fetches = true;
};

struct LocatedModel {
  const ModelEntry* entry = nullptr;
  std::filesystem::path path;
  const SearchPlace* place = nullptr;
};

// ${XDG_CACHE_HOME}/parley/models, else $HOME/.cache/parley/models; empty when neither is set.
std::filesystem::path user_cache_models_dir();

// `models` beside the running executable (build/models for build/parley); empty when unknown.
std::filesystem::path executable_models_dir();

// The folders parley itself brings models in, in this order, whether they exist or not:
//   "beside the executable"  `models` beside the running program (build/models for build/parley);
//   "installed with parley"  share/parley/models of the prefix the program (bin/) or the library
//                            (lib/) is installed in, where `cmake --install` puts the build's
//                            models;
//   "build tree"             the models folder of the build tree this code was compiled in
//                            (build/models), for the library used from the build tree or from a
//                            wheel built there (a Python venv, a C program linked in place).
std::vector<SearchPlace> builtin_search_places();

// The search order for this process: `models_flag` when given (an error when that folder does
// not exist: a typo must not silently fall through to other models), $PARLEY_MODELS when set and
// non-empty, the per-user cache, then those of `builtin` that exist, each folder once, when
// neither the flag nor the variable named a folder.
std::vector<SearchPlace> default_search_places(
    const std::optional<std::filesystem::path>& models_flag,
    const std::vector<SearchPlace>& builtin = builtin_search_places());

class ModelLocator {
 public:
  ModelLocator(const Registry& registry, std::vector<SearchPlace> places);
  // Uses default_search_places(models_flag).
  ModelLocator(const Registry& registry, const std::optional<std::filesystem::path>& models_flag);

  const std::vector<SearchPlace>& places() const { return places_; }
  const Registry& registry() const { return *registry_; }

  // The first file of this entry in the search order.
  std::optional<LocatedModel> find(const ModelEntry& entry) const;
  // The preferred file for a role: folders in order, entries in preference order within each.
  std::optional<LocatedModel> find(Role role) const;
  // Like find(role), or an error listing every place searched and the fetch command to run.
  LocatedModel locate(Role role) const;

  // Where `parley models fetch` puts files: the first search place that takes fetches.
  std::filesystem::path fetch_dir() const;

 private:
  const Registry* registry_;
  std::vector<SearchPlace> places_;
};

}  // namespace parley::models
