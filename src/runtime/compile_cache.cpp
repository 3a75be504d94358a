#include "runtime/compile_cache.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <tuple>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/sha256.h"

namespace parley::runtime {
namespace fs = std::filesystem;
namespace {

constexpr int kManifestFormat = 1;
constexpr const char* kManifestName = "manifest.json";
constexpr const char* kArtifactsName = "artifacts";
constexpr const char* kLastUsedName = "last_used";
constexpr const char* kBuildPrefix = ".build-";
constexpr const char* kMarkerName = ".parley-compile-cache";
// A build folder this old is abandoned (its process died); younger ones may be in progress.
constexpr std::chrono::hours kAbandonedBuildAge{1};

std::time_t to_time_t(fs::file_time_type time) {
  return std::chrono::system_clock::to_time_t(
      std::chrono::time_point_cast<std::chrono::system_clock::duration>(
          std::chrono::file_clock::to_sys(time)));
}

bool is_real_directory(const fs::path& path) {
  std::error_code ec;
  return fs::symlink_status(path, ec).type() == fs::file_type::directory;
}

bool is_real_file(const fs::path& path) {
  std::error_code ec;
  return fs::symlink_status(path, ec).type() == fs::file_type::regular;
}

bool is_hex(std::string_view text) {
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

bool is_digits(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// ".build-<32 hex>-<pid>-<n>", as begin_build() names it.
bool is_build_name(std::string_view name) {
  const std::string_view prefix = kBuildPrefix;
  if (name.substr(0, prefix.size()) != prefix) return false;
  name.remove_prefix(prefix.size());
  if (name.size() < 36 || !is_hex(name.substr(0, 32)) || name[32] != '-') return false;
  name.remove_prefix(33);
  const auto dash = name.find('-');
  return dash != std::string_view::npos && is_digits(name.substr(0, dash)) &&
         is_digits(name.substr(dash + 1));
}

bool is_provider_folder(const fs::path& dir) {
  const std::string name = dir.filename().string();
  const auto provider = find_provider(name);
  return provider && provider_name(*provider) == name && is_real_directory(dir);
}

// Written by parley: a real folder (not a link) in a real provider folder, named as the cache
// names its entries, holding the cache's manifest (or one of its build folders).
bool owned_entry(const fs::path& dir) {
  if (!is_real_directory(dir) || !is_provider_folder(dir.parent_path())) return false;
  const std::string name = dir.filename().string();
  if (is_build_name(name)) return true;
  return name.size() == 32 && is_hex(name) && is_real_file(dir / kManifestName);
}

// Removes an owned entry (remove_all does not follow the links inside it); returns whether it
// did. Anything else is left where it is.
bool remove_owned_entry(const fs::path& dir) {
  if (!owned_entry(dir)) return false;
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (ec) {
    fail("{}: cannot remove the compiled-graph cache entry: {} (check the folder's permissions)",
         dir.string(), ec.message());
  }
  return true;
}

// A cache written before the marker existed: every item is a provider folder holding only
// entries parley wrote. Such a folder is provably parley's and gets its marker.
// The folder where the pipeline keeps the models it derives for the cache (models/
// content_addressed_model.h: <stem>-<16 hex>.onnx), written before the cache has a marker.
bool derived_models_folder(const fs::path& dir) {
  if (dir.filename() != "models" || !is_real_directory(dir)) return false;
  std::error_code ec;
  for (const auto& file : fs::directory_iterator(dir, ec)) {
    const std::string name = file.path().filename().string();
    const auto dash = name.rfind('-');
    if (!is_real_file(file.path()) || file.path().extension() != ".onnx" ||
        dash == std::string::npos || name.size() != dash + 1 + 16 + 5 ||
        !is_hex(name.substr(dash + 1, 16))) {
      return false;
    }
  }
  return !ec;
}

bool parley_shaped(const fs::path& root) {
  std::error_code ec;
  for (const auto& item : fs::directory_iterator(root, ec)) {
    if (derived_models_folder(item.path())) continue;
    if (!is_provider_folder(item.path())) return false;
    for (const auto& entry : fs::directory_iterator(item.path(), ec)) {
      if (!owned_entry(entry.path())) return false;
    }
    if (ec) return false;
  }
  return !ec;
}

std::uintmax_t folder_bytes(const fs::path& dir) {
  std::uintmax_t total = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code size_ec;
    if (it->symlink_status(size_ec).type() == fs::file_type::regular) {
      const auto size = it->file_size(size_ec);
      if (!size_ec) total += size;
    }
  }
  return total;
}

int major_minor(const std::string& version) {
  int major = 0;
  int minor = 0;
  std::istringstream stream(version);
  char dot = 0;
  stream >> major >> dot >> minor;
  return major * 1000 + minor;
}

nlohmann::json environment_json(const CompileEnvironment& environment) {
  return {{"ort_version", environment.ort_version},
          {"provider_library", environment.provider_library},
          {"device", environment.device}};
}

void touch(const fs::path& file) {
  { std::ofstream(file, std::ios::app); }
  std::error_code ec;
  fs::last_write_time(file, fs::file_time_type::clock::now(), ec);
}

// A whole number of the manifest that fits `Integer`; nlohmann's get<> converts a float such as
// 1e82 with undefined behaviour, and a wrapped count would pass for a size.
template <typename Integer>
Integer manifest_integer(const nlohmann::json& value, const char* field) {
  const bool fits = value.is_number_unsigned()
                        ? value.get<std::uint64_t>() <=
                              static_cast<std::uint64_t>(std::numeric_limits<Integer>::max())
                        : value.is_number_integer() && value.get<std::int64_t>() >= 0;
  if (!fits) throw std::runtime_error(fmt::format("{} is not a count: {}", field, value.dump()));
  return static_cast<Integer>(value.get<std::uint64_t>());
}

}  // namespace

std::string CompileKey::canonical() const {
  std::string options_text;
  for (const auto& [key, value] : options) {
    if (!options_text.empty()) options_text += ';';
    options_text += key + "=" + value;
  }
  return fmt::format(
      "format={}\nmodel_sha256={}\ninputs={}\nprovider={}\noptions={}\nort_version={}\n"
      "provider_library={}\ndevice={}\n",
      kManifestFormat, model_sha256, shapes_to_string(input_shapes), provider_name(provider),
      options_text, environment.ort_version, environment.provider_library, environment.device);
}

std::string CompileKey::digest() const { return sha256_text(canonical()); }

std::vector<std::string> cache_option_keys(ProviderId provider) {
  switch (traits(provider).cache_kind) {
    case CompiledCacheKind::kMigraphxProgram:
      return {"migraphx_model_cache_dir", "migraphx_save_compiled_model",
              "migraphx_save_compiled_path", "migraphx_load_compiled_model",
              "migraphx_load_compiled_path"};
    case CompiledCacheKind::kTensorRtEngine:
      return {"trt_engine_cache_enable", "trt_engine_cache_path", "trt_timing_cache_enable",
              "trt_timing_cache_path"};
    case CompiledCacheKind::kCoreMlModel:
      return {"ModelCacheDirectory"};
    case CompiledCacheKind::kOpenVinoBlob:
      return {"cache_dir"};
    case CompiledCacheKind::kNone:
      return {};
  }
  return {};
}

ProviderOptions cache_options(ProviderId provider, const fs::path& artifacts_dir,
                              const std::string& ort_version) {
  const std::string dir = artifacts_dir.string();
  switch (traits(provider).cache_kind) {
    case CompiledCacheKind::kMigraphxProgram:
      // ONNX Runtime 1.23 replaced the save/load pair with one cache folder; the provider names
      // each program after the MIGraphX version, device architecture and input shapes.
      if (major_minor(ort_version) >= 1023) return {{"migraphx_model_cache_dir", dir}};
      return {{"migraphx_save_compiled_model", "1"},
              {"migraphx_save_compiled_path", (artifacts_dir / "model.mxr").string()},
              {"migraphx_load_compiled_model", "1"},
              {"migraphx_load_compiled_path", (artifacts_dir / "model.mxr").string()}};
    case CompiledCacheKind::kTensorRtEngine:
      return {{"trt_engine_cache_enable", "1"},
              {"trt_engine_cache_path", dir},
              {"trt_timing_cache_enable", "1"},
              {"trt_timing_cache_path", dir}};
    case CompiledCacheKind::kCoreMlModel:
      return {{"ModelCacheDirectory", dir}};
    case CompiledCacheKind::kOpenVinoBlob:
      return {{"cache_dir", dir}};
    case CompiledCacheKind::kNone:
      return {};
  }
  return {};
}

CompileKey make_compile_key(std::string model_sha256, std::string model_name,
                            std::vector<InputShape> input_shapes, ProviderId provider,
                            const ProviderOptions& options, CompileEnvironment environment) {
  CompileKey key;
  key.model_sha256 = std::move(model_sha256);
  key.model_name = std::move(model_name);
  key.input_shapes = std::move(input_shapes);
  key.provider = provider;
  key.options = options;
  for (const auto& cache_key : cache_option_keys(provider)) key.options.erase(cache_key);
  key.environment = std::move(environment);
  return key;
}

const char* entry_state_name(EntryState state) {
  switch (state) {
    case EntryState::kValid:
      return "valid";
    case EntryState::kCorrupt:
      return "corrupt";
    case EntryState::kStale:
      return "stale";
  }
  return "?";
}

EntryInfo inspect_entry(const fs::path& entry_dir, Verification verification,
                        const CompileKey* expected, const CompileEnvironment* current) {
  EntryInfo info;
  info.dir = entry_dir;
  info.owned = owned_entry(entry_dir);
  info.bytes_on_disk = folder_bytes(entry_dir);
  std::error_code ec;
  if (auto time = fs::last_write_time(entry_dir / kLastUsedName, ec); !ec) {
    info.last_used = to_time_t(time);
  }
  auto corrupt = [&](std::string reason) {
    info.state = EntryState::kCorrupt;
    info.reason = std::move(reason);
    return info;
  };
  if (entry_dir.filename().string().rfind(kBuildPrefix, 0) == 0) {
    return corrupt("unfinished build (its process stopped or is still compiling)");
  }
  const fs::path manifest_path = entry_dir / kManifestName;
  std::ifstream manifest_stream(manifest_path);
  if (!manifest_stream) return corrupt("manifest.json is missing");
  nlohmann::json manifest;
  try {
    manifest = nlohmann::json::parse(manifest_stream);
    info.provider = manifest.at("key").at("provider").get<std::string>();
    info.model_name = manifest.at("key").value("model_name", "");
    info.inputs = manifest.at("key").at("inputs").get<std::string>();
    info.key_digest = manifest.at("key_sha256").get<std::string>();
    const auto& environment = manifest.at("key").at("environment");
    info.environment = {environment.at("ort_version").get<std::string>(),
                        environment.at("provider_library").get<std::string>(),
                        environment.at("device").get<std::string>()};
    info.build_seconds = manifest.value("build_seconds", 0.0);
    info.created = manifest_integer<std::time_t>(manifest.at("created_unix"), "created_unix");
    for (const auto& file : manifest.at("files")) {
      info.files.push_back({file.at("path").get<std::string>(),
                            manifest_integer<std::uintmax_t>(file.at("size"), "size"),
                            file.at("sha256").get<std::string>()});
    }
    const int format = manifest_integer<int>(manifest.at("format"), "format");
    if (format != kManifestFormat) {
      info.state = EntryState::kStale;
      info.reason =
          fmt::format("manifest format {} (this parley writes {})", format, kManifestFormat);
      return info;
    }
    if (sha256_text(manifest.at("key_canonical").get<std::string>()) != info.key_digest) {
      return corrupt("manifest key does not match its recorded digest");
    }
  } catch (const std::exception& error) {
    return corrupt(fmt::format("manifest.json is unreadable: {}", error.what()));
  }
  if (info.files.empty()) return corrupt("manifest lists no compiled files");
  for (const auto& file : info.files) {
    const fs::path path = entry_dir / file.path;
    if (file.path.find("..") != std::string::npos || fs::path(file.path).is_absolute())
      return corrupt("manifest names a file outside the entry");
    const auto size = fs::file_size(path, ec);
    if (ec) return corrupt(fmt::format("{} is missing", file.path));
    if (size != file.size) {
      return corrupt(fmt::format("{} is {} bytes, the manifest says {} (truncated or rewritten)",
                                 file.path, size, file.size));
    }
    if (verification == Verification::kHashes && sha256_file(path) != file.sha256) {
      return corrupt(fmt::format("{} does not match its sha256", file.path));
    }
  }
  if (expected != nullptr) {
    if (expected->digest() != info.key_digest ||
        manifest.at("key_canonical").get<std::string>() != expected->canonical()) {
      info.state = EntryState::kStale;
      info.reason = "built for a different key";
      return info;
    }
  }
  if (current != nullptr && !(*current == info.environment)) {
    info.state = EntryState::kStale;
    if (current->ort_version != info.environment.ort_version) {
      info.reason = fmt::format("built with ONNX Runtime {}, now {}", info.environment.ort_version,
                                current->ort_version);
    } else if (current->provider_library != info.environment.provider_library) {
      info.reason = fmt::format("built with provider library {}, now {}",
                                info.environment.provider_library, current->provider_library);
    } else {
      info.reason =
          fmt::format("built for device '{}', now '{}'", info.environment.device, current->device);
    }
    return info;
  }
  info.state = EntryState::kValid;
  return info;
}

CompileCache::CompileCache(fs::path root) : root_(std::move(root)) {
  if (root_.empty()) {
    fail("compiled-graph cache: no folder (set PARLEY_COMPILE_CACHE, XDG_CACHE_HOME or HOME)");
  }
}

bool CompileCache::marked() const { return is_real_file(root_ / kMarkerName); }

void CompileCache::ensure_root() const {
  if (marked()) return;
  std::error_code ec;
  if (fs::exists(root_, ec)) {
    if (!fs::is_directory(root_, ec)) {
      fail("{}: the compiled-graph cache must be a folder (set PARLEY_COMPILE_CACHE to one)",
           root_.string());
    }
    if (!fs::is_empty(root_, ec) && !parley_shaped(root_)) {
      fail(
          "{}: holds files that are not a parley compiled-graph cache (no {} marker); parley "
          "will not put its cache among them: set PARLEY_COMPILE_CACHE to a new or empty folder",
          root_.string(), kMarkerName);
    }
  }
  fs::create_directories(root_, ec);
  if (ec) {
    fail(
        "{}: cannot create the compiled-graph cache: {} (set PARLEY_COMPILE_CACHE to a writable "
        "folder)",
        root_.string(), ec.message());
  }
  write_file_atomically(root_ / kMarkerName,
                        "This folder is parley's compiled-graph cache; parley only removes "
                        "entries it wrote here.\n");
}

void CompileCache::require_marked() const {
  std::error_code ec;
  if (marked() || !fs::exists(root_, ec)) return;
  if (fs::is_directory(root_, ec) && parley_shaped(root_)) {
    ensure_root();  // an older cache: adopt it
    return;
  }
  fail(
      "{}: not a parley compiled-graph cache (it has no {} marker), so parley leaves it alone; "
      "point PARLEY_COMPILE_CACHE (or the cache folder option) at the cache itself",
      root_.string(), kMarkerName);
}

fs::path CompileCache::default_root() {
  if (const char* explicit_root = std::getenv("PARLEY_COMPILE_CACHE");
      explicit_root != nullptr && *explicit_root != '\0') {
    return explicit_root;
  }
  if (const char* cache = std::getenv("XDG_CACHE_HOME"); cache != nullptr && *cache != '\0') {
    return fs::path(cache) / "parley" / "compiled";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return fs::path(home) / ".cache" / "parley" / "compiled";
  }
  return {};
}

fs::path CompileCache::root_or_default(const fs::path& root) {
  return root.empty() ? default_root() : root;
}

fs::path CompileCache::entry_dir(const CompileKey& key) const {
  return root_ / std::string(provider_name(key.provider)) / key.digest().substr(0, 32);
}

CompileCache::Lookup CompileCache::lookup(const CompileKey& key, Verification verification) {
  Lookup result;
  const fs::path dir = entry_dir(key);
  std::error_code ec;
  if (!marked() || !fs::exists(dir, ec)) return result;
  const EntryInfo info = inspect_entry(dir, verification, &key, &key.environment);
  if (info.state == EntryState::kValid && info.owned) {
    touch(dir / kLastUsedName);
    result.hit = true;
    result.artifacts_dir = dir / kArtifactsName;
    return result;
  }
  if (!remove_owned_entry(dir)) {
    fail(
        "{}: this compiled-graph cache entry is {} ({}) and not provably parley's (a link, or no "
        "manifest), so parley leaves it alone: remove it by hand",
        dir.string(), entry_state_name(info.state), info.reason);
  }
  result.note = fmt::format("compiled-graph cache entry {} was {} ({}); rebuilding it",
                            dir.string(), entry_state_name(info.state), info.reason);
  return result;
}

bool CompileCache::invalidate(const CompileKey& key) {
  return marked() && remove_owned_entry(entry_dir(key));
}

CompileCache::Build::Build(CompileKey key, fs::path staging, fs::path target)
    : key_(std::move(key)),
      staging_(std::move(staging)),
      artifacts_(staging_ / kArtifactsName),
      target_(std::move(target)) {}

CompileCache::Build::Build(Build&& other) noexcept
    : key_(std::move(other.key_)),
      staging_(std::move(other.staging_)),
      artifacts_(std::move(other.artifacts_)),
      target_(std::move(other.target_)),
      done_(other.done_) {
  other.done_ = true;
}

CompileCache::Build::~Build() {
  if (!done_) {
    std::error_code ec;
    fs::remove_all(staging_, ec);
  }
}

EntryInfo CompileCache::Build::commit(double build_seconds) {
  if (done_) fail("compiled-graph cache: build of {} was already committed", target_.string());
  nlohmann::json files = nlohmann::json::array();
  std::error_code ec;
  std::vector<fs::path> written;
  for (fs::recursive_directory_iterator it(artifacts_, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it->is_regular_file()) written.push_back(it->path());
  }
  std::sort(written.begin(), written.end());
  if (written.empty()) {
    fail(
        "{}: {} wrote no compiled files into {}; its cache options had no effect, so nothing can "
        "be reused (check the provider version and provider_options)",
        key_.model_name, provider_name(key_.provider), artifacts_.string());
  }
  for (const auto& path : written) {
    files.push_back({{"path", fs::relative(path, staging_).generic_string()},
                     {"size", fs::file_size(path)},
                     {"sha256", sha256_file(path)}});
  }
  nlohmann::json key_json = {{"model_sha256", key_.model_sha256},
                             {"model_name", key_.model_name},
                             {"inputs", shapes_to_string(key_.input_shapes)},
                             {"provider", provider_name(key_.provider)},
                             {"options", key_.options},
                             {"environment", environment_json(key_.environment)}};
  const nlohmann::json manifest = {{"format", kManifestFormat},
                                   {"key", key_json},
                                   {"key_canonical", key_.canonical()},
                                   {"key_sha256", key_.digest()},
                                   {"created_unix", std::time(nullptr)},
                                   {"build_seconds", build_seconds},
                                   {"files", files}};
  write_file_atomically(staging_ / kManifestName, manifest.dump(2) + "\n");
  touch(staging_ / kLastUsedName);
  // A corrupt leftover, or a concurrent build that finished first; anything else at the target
  // stays, and the rename below then fails harmlessly.
  remove_owned_entry(target_);
  fs::rename(staging_, target_, ec);
  if (ec) {
    // Another process published the same entry between the removal and the rename.
    fs::remove_all(staging_, ec);
  }
  done_ = true;
  return inspect_entry(target_, Verification::kSizes);
}

CompileCache::Build CompileCache::begin_build(const CompileKey& key) {
  static std::atomic<int> counter{0};
  ensure_root();
  const fs::path target = entry_dir(key);
  const fs::path staging =
      target.parent_path() / fmt::format("{}{}-{}-{}", kBuildPrefix, key.digest().substr(0, 32),
                                         static_cast<long>(::getpid()), counter++);
  std::error_code ec;
  fs::create_directories(staging / kArtifactsName, ec);
  if (ec) {
    fail(
        "{}: cannot create a compiled-graph cache folder: {} (set PARLEY_COMPILE_CACHE to a "
        "writable folder)",
        staging.string(), ec.message());
  }
  return Build(key, staging, target);
}

std::vector<EntryInfo> CompileCache::list(Verification verification,
                                          const CurrentEnvironments* current) const {
  std::vector<EntryInfo> entries;
  std::error_code ec;
  if (!fs::is_directory(root_, ec) || !marked()) return entries;
  for (const auto& provider_dir : fs::directory_iterator(root_, ec)) {
    if (!is_real_directory(provider_dir.path())) continue;  // links are not followed
    for (const auto& entry : fs::directory_iterator(provider_dir.path(), ec)) {
      if (!is_real_directory(entry.path())) continue;
      const CompileEnvironment* environment = nullptr;
      if (current != nullptr) {
        auto it = current->find(provider_dir.path().filename().string());
        if (it != current->end()) environment = &it->second;
      }
      entries.push_back(inspect_entry(entry.path(), verification, nullptr, environment));
    }
  }
  std::sort(entries.begin(), entries.end(), [](const EntryInfo& a, const EntryInfo& b) {
    return std::tie(a.provider, a.model_name, a.inputs, a.dir) <
           std::tie(b.provider, b.model_name, b.inputs, b.dir);
  });
  return entries;
}

PruneReport CompileCache::prune(const PruneOptions& options, std::time_t now,
                                const CurrentEnvironments* current) {
  PruneReport report;
  require_marked();
  std::vector<EntryInfo> kept;
  for (auto& entry : list(options.verification, current)) {
    if (!entry.owned) {
      report.left_alone.push_back(std::move(entry));
      continue;
    }
    std::string reason;
    const bool unfinished = entry.dir.filename().string().rfind(kBuildPrefix, 0) == 0;
    std::error_code ec;
    const auto modified = fs::last_write_time(entry.dir, ec);
    const bool abandoned =
        unfinished && !ec &&
        now - to_time_t(modified) >=
            std::chrono::duration_cast<std::chrono::seconds>(kAbandonedBuildAge).count();
    const std::time_t last_used = entry.last_used != 0 ? entry.last_used : entry.created;
    if (unfinished) {
      if (abandoned) reason = "abandoned build";
    } else if (options.remove_invalid && entry.state != EntryState::kValid) {
      reason = fmt::format("{}: {}", entry_state_name(entry.state), entry.reason);
    } else if (options.unused_for && now - last_used >= options.unused_for->count()) {
      reason = fmt::format("unused for {} days", (now - last_used) / 86400);
    }
    if (reason.empty()) {
      if (!unfinished) kept.push_back(std::move(entry));
      continue;
    }
    report.bytes_freed += entry.bytes_on_disk;
    report.reasons.push_back(std::move(reason));
    report.removed.push_back(std::move(entry));
  }
  std::uintmax_t kept_bytes = 0;
  for (const auto& entry : kept) kept_bytes += entry.bytes_on_disk;
  if (options.max_total_bytes && kept_bytes > *options.max_total_bytes) {
    // Least recently used first.
    std::sort(kept.begin(), kept.end(), [](const EntryInfo& a, const EntryInfo& b) {
      const auto a_used = a.last_used != 0 ? a.last_used : a.created;
      const auto b_used = b.last_used != 0 ? b.last_used : b.created;
      return std::tie(a_used, a.dir) < std::tie(b_used, b.dir);
    });
    std::size_t removed = 0;
    while (removed < kept.size() && kept_bytes > *options.max_total_bytes) {
      kept_bytes -= kept[removed].bytes_on_disk;
      report.bytes_freed += kept[removed].bytes_on_disk;
      report.reasons.push_back(fmt::format("least recently used while over the {} byte limit",
                                           *options.max_total_bytes));
      report.removed.push_back(std::move(kept[removed]));
      ++removed;
    }
    kept.erase(kept.begin(), kept.begin() + static_cast<std::ptrdiff_t>(removed));
  }
  report.bytes_kept = kept_bytes;
  if (!options.dry_run) {
    for (const auto& entry : report.removed) remove_owned_entry(entry.dir);
  }
  return report;
}

}  // namespace parley::runtime
