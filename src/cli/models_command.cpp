// `parley models list|verify|fetch`: what the registry names, whether the files on disk are the
// right ones, and downloading the missing ones.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/flag_names.h"
#include "core/error.h"
#include "core/text.h"
#include "models/downloader.h"
#include "models/model_locator.h"
#include "models/model_verifier.h"
#include "models/registry.h"
#include "models/speed_twin.h"

namespace parley::cli {
namespace {

struct ModelsArguments {
  std::string models_dir;  // --models: searched before $PARLEY_MODELS and the user cache
  std::string dir;         // --dir: verify or fetch exactly this folder
  std::string role;
  std::string id;
  bool all = false;
};

models::ModelLocator make_locator(const ModelsArguments& arguments) {
  std::optional<std::filesystem::path> models_flag;
  if (!arguments.models_dir.empty()) models_flag = arguments.models_dir;
  return models::ModelLocator(models::Registry::builtin(), models_flag);
}

std::string places_text(const std::vector<models::SearchPlace>& places) {
  if (places.empty()) return "none (pass --models DIR or set PARLEY_MODELS)";
  std::vector<std::string> parts;
  for (std::size_t index = 0; index < places.size(); ++index) {
    parts.push_back(fmt::format("{}. {} ({})", index + 1, places[index].dir.string(),
                                with_flag_names(places[index].origin)));
  }
  return fmt::format("{}", fmt::join(parts, "  "));
}

void run_list(const ModelsArguments& arguments) {
  const models::ModelLocator locator = make_locator(arguments);
  const models::Registry& registry = locator.registry();
  fmt::print("Model registry: {}\n", registry.source_name());
  fmt::print("Search order: {}\n\n", places_text(locator.places()));
  fmt::print("{}\n", registry.describe());
  fmt::print("On this machine:\n");
  for (const auto& entry : registry.entries()) {
    const auto found = locator.find(entry);
    fmt::print("  {:<28} {}\n", entry.id, found ? found->path.string() : std::string("not found"));
  }
  fmt::print("\nThe pipeline would use:\n");
  for (models::Role role : models::all_roles()) {
    const auto found = locator.find(role);
    std::string chosen =
        "nothing: run `parley models fetch --role " + std::string(models::role_name(role)) + "`";
    if (found) {
      chosen = fmt::format("{} ({})", found->path.string(), found->entry->id);
      if (found->entry->speed_twin)
        chosen += "  <- SPEED TWIN: speaker labels would be meaningless";
    } else if (const auto* entry = registry.default_for(role); entry && entry->optional) {
      chosen = "nothing (optional)";
    }
    fmt::print("  {:<15} {}\n", models::role_name(role), chosen);
  }
}

void print_verification(const models::Verification& result) {
  const char* status = result.passed() ? "OK" : "FAILED";
  fmt::print("{:<8} {:<28} {}\n", status, result.entry->id, result.path.string());
  for (const auto& problem : result.problems) fmt::print("           {}\n", problem);
  for (const auto& note : result.notes) fmt::print("           note: {}\n", note);
}

void run_verify(const ModelsArguments& arguments) {
  const models::Registry& registry = models::Registry::builtin();
  std::vector<models::SearchPlace> places;
  if (!arguments.dir.empty()) {
    places.push_back({arguments.dir, "--dir"});
  } else {
    places = models::default_search_places(
        arguments.models_dir.empty() ? std::nullopt
                                     : std::optional<std::filesystem::path>(arguments.models_dir));
  }
  const models::ModelLocator locator(registry, places);
  fmt::print("Verifying against {} in: {}\n", registry.source_name(), places_text(places));

  std::size_t passed = 0;
  std::size_t failed = 0;
  std::vector<std::string> missing;
  for (const auto& entry : registry.entries()) {
    const auto found = locator.find(entry);
    if (!found) {
      missing.push_back(entry.id);
      continue;
    }
    const models::Verification result = models::verify_model_file(entry, found->path);
    print_verification(result);
    (result.passed() ? passed : failed) += 1;
  }
  if (!missing.empty()) fmt::print("missing  {}\n", fmt::join(missing, ", "));
  fmt::print("{} verified, {} failed, {} missing\n", passed, failed, missing.size());
  if (failed > 0) {
    fail("{} failed verification (details above); replace them as each message says",
         counted(failed, "model file"));
  }
  if (passed == 0) {
    fail("no model files found in {}; run `parley models fetch`", places_text(places));
  }
  // Files that verify are not enough: the pipeline needs one model of every required role.
  std::vector<std::string> roles_without_model;
  bool speed_twin = false;
  for (const models::Role role : models::all_roles()) {
    if (const auto found = locator.find(role)) {
      speed_twin = speed_twin || found->entry->speed_twin;
      continue;
    }
    if (const auto* entry = registry.default_for(role); entry == nullptr || !entry->optional) {
      roles_without_model.emplace_back(models::role_name(role));
    }
  }
  if (!roles_without_model.empty()) {
    fmt::print("pipeline: cannot run (no {} model)\n", fmt::join(roles_without_model, ", "));
    fail(
        "the pipeline cannot run from {}: no {} model; run `parley models fetch --role ROLE` for "
        "each (or pass the folder that holds them)",
        places_text(places), fmt::join(roles_without_model, ", "));
  }
  fmt::print("pipeline: can run{}\n",
             speed_twin ? " (with the speed twin: timing is real, speaker labels are not)" : "");
}

std::vector<const models::ModelEntry*> select_for_fetch(const ModelsArguments& arguments) {
  const models::Registry& registry = models::Registry::builtin();
  std::vector<const models::ModelEntry*> selected;
  if (!arguments.id.empty()) {
    selected.push_back(&registry.get(arguments.id));
  } else if (!arguments.role.empty()) {
    const auto role = models::parse_role(arguments.role);
    if (!role) {
      fail("--role {}: unknown role; use segmentation, embedding, plda, xvec_transform or vad",
           arguments.role);
    }
    const auto* entry = registry.default_for(*role);
    if (entry == nullptr) fail("the registry has no default {} model", arguments.role);
    selected.push_back(entry);
  } else {
    for (const auto& entry : registry.entries()) {
      const bool wanted = arguments.all ? !entry.urls.empty() : entry.is_default && !entry.optional;
      if (wanted) selected.push_back(&entry);
    }
  }
  return selected;
}

void run_fetch(const ModelsArguments& arguments) {
  const std::filesystem::path dir = arguments.dir.empty() ? make_locator(arguments).fetch_dir()
                                                          : std::filesystem::path(arguments.dir);
  const auto selected = select_for_fetch(arguments);
  const models::DownloadOptions options = models::default_download_options();
  fmt::print("Fetching into {}\n", dir.string());
  std::vector<std::string> failures;
  for (const models::ModelEntry* entry : selected) {
    const auto target = dir / entry->file;
    if (std::filesystem::exists(target) && models::verify_model_file(*entry, target).passed()) {
      fmt::print("present  {:<28} {}\n", entry->id, target.string());
      continue;
    }
    try {
      if (entry->gated && !options.huggingface_token) {
        fmt::print(stderr,
                   "parley: note: {} comes from a gated Hugging Face repository; if the download "
                   "is refused, accept the conditions at {} and set HF_TOKEN\n",
                   entry->id, entry->source);
      }
      const auto download = models::fetch_model(*entry, dir, options);
      const models::Verification result = models::verify_model_file(*entry, target);
      if (!result.passed()) {
        print_verification(result);
        failures.push_back(fmt::format("{}: downloaded but failed verification", entry->id));
        continue;
      }
      fmt::print("fetched  {:<28} {} ({} bytes{}, sha256 {})\n", entry->id, target.string(),
                 download.bytes, download.resumed ? ", resumed" : "",
                 entry->sha256 ? "OK" : "not published, unchecked");
    } catch (const Error& error) {
      fmt::print(stderr, "parley: {}: {}\n", entry->id, error.what());
      failures.push_back(entry->id);
    }
  }
  if (!failures.empty()) {
    fail("{} of {} model(s) could not be fetched ({}); see the messages above", failures.size(),
         selected.size(), fmt::join(failures, ", "));
  }
}

}  // namespace

void add_models_command(CLI::App& app) {
  auto arguments = std::make_shared<ModelsArguments>();
  auto* models = app.add_subcommand("models", "List, verify and download the models parley uses");
  models->require_subcommand(1);
  models->add_option("--models", arguments->models_dir,
                     "Folder searched first for model files (then $PARLEY_MODELS, then "
                     "${XDG_CACHE_HOME:-~/.cache}/parley/models; then, only when neither names "
                     "a folder, models/ beside parley, share/parley/models of an install and the "
                     "build tree's models/)");

  auto* list = models->add_subcommand("list", "Show the model registry and where each file is");
  list->fallthrough();
  list->callback([arguments] { run_list(*arguments); });

  auto* verify = models->add_subcommand(
      "verify", "Check model files: size, sha256, and ONNX input/output signature");
  verify->fallthrough();
  verify->add_option("--dir", arguments->dir, "Verify this folder only");
  verify->callback([arguments] { run_verify(*arguments); });

  auto* fetch = models->add_subcommand(
      "fetch", "Download the models the pipeline needs (resumable, checksum-verified)");
  fetch->fallthrough();
  fetch->add_option("--dir", arguments->dir,
                    "Folder to download into (default: --models, else $PARLEY_MODELS, else the "
                    "per-user cache)");
  fetch->add_option("--role", arguments->role,
                    "Only this role's default model: segmentation, embedding, plda, "
                    "xvec_transform, vad");
  fetch->add_option("--id", arguments->id, "Only this registry entry (see `parley models list`)");
  fetch->add_flag("--all", arguments->all, "Every downloadable entry, variants included");
  fetch->callback([arguments] { run_fetch(*arguments); });
}

}  // namespace parley::cli
