#pragma once
// The compiled-graph cache: what a static-shape provider compiled for one model, input shape,
// provider configuration and machine, kept on disk so later runs load it instead of compiling.
//
// Layout under the root (default `${XDG_CACHE_HOME:-~/.cache}/parley/compiled`, or
// $PARLEY_COMPILE_CACHE):
//   <provider>/<key digest, 32 hex>/manifest.json   key ingredients, file sizes and sha256
//   <provider>/<key digest>/artifacts/...           whatever the provider wrote
//   <provider>/<key digest>/last_used               empty; its mtime is the last use
//   <provider>/.build-<digest>-<pid>-<n>/           an entry being built (renamed when done)
//   .parley-compile-cache                           marker: this folder is a parley cache
// The cache only ever removes what it provably wrote: nothing in a folder without the marker
// (written when parley creates the cache in a new or empty folder), only folders named as it
// names entries that hold its manifest (or are its build folders), and never through a symbolic
// link (linked folders are neither listed nor removed).
// An entry is validated before use; one that is corrupted (missing or truncated file, bad
// manifest, sha256 mismatch) or stale (different key) is removed and rebuilt.
#include <chrono>
#include <cstdint>
#include <ctime>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/provider.h"
#include "runtime/shape_plan.h"

namespace parley::runtime {

// Facts about this machine and build that make a compiled graph invalid when they change.
struct CompileEnvironment {
  std::string ort_version;       // ONNX Runtime library version, e.g. "1.29.0"
  std::string provider_library;  // provider library identity (file name, size, mtime) or "built-in"
  std::string device;            // device name and driver version

  bool operator==(const CompileEnvironment&) const = default;
};

// Everything a compiled graph depends on. The digest of canonical() names the entry.
struct CompileKey {
  std::string model_sha256;
  std::string model_name;  // for humans only: not part of the digest
  std::vector<InputShape> input_shapes;
  ProviderId provider = ProviderId::kCpu;
  ProviderOptions options;  // effective options without the cache-location options
  CompileEnvironment environment;

  // One "key=value" line per ingredient, in a fixed order (format version first).
  std::string canonical() const;
  std::string digest() const;  // sha256 of canonical(), lower-case hex
};

// Builds a key, dropping the options that only say where the cache is (they differ per entry).
CompileKey make_compile_key(std::string model_sha256, std::string model_name,
                            std::vector<InputShape> input_shapes, ProviderId provider,
                            const ProviderOptions& options, CompileEnvironment environment);

// Provider options that make `provider` load from and save into `artifacts_dir`; empty for
// providers without a compiled-graph cache. `ort_version` picks between option generations.
ProviderOptions cache_options(ProviderId provider, const std::filesystem::path& artifacts_dir,
                              const std::string& ort_version);
// The option keys cache_options() may set for this provider.
std::vector<std::string> cache_option_keys(ProviderId provider);

// The current environment per provider name, to judge entries stale; providers missing from the
// map are not judged.
using CurrentEnvironments = std::map<std::string, CompileEnvironment>;

enum class EntryState { kValid, kCorrupt, kStale };
const char* entry_state_name(EntryState state);

struct CachedFile {
  std::string path;  // relative to the entry folder
  std::uintmax_t size = 0;
  std::string sha256;
};

struct EntryInfo {
  std::filesystem::path dir;
  EntryState state = EntryState::kCorrupt;
  std::string reason;  // why not valid; empty when valid
  // From the manifest (empty when it could not be read):
  std::string provider;
  std::string model_name;
  std::string inputs;
  std::string key_digest;
  CompileEnvironment environment;
  std::vector<CachedFile> files;
  std::uintmax_t bytes_on_disk = 0;  // what the folder occupies, manifest or not
  // Written by parley (a build folder, or an entry folder with its manifest.json): the only kind
  // of folder the cache removes.
  bool owned = false;
  double build_seconds = 0.0;
  std::time_t created = 0;
  std::time_t last_used = 0;
};

enum class Verification {
  kSizes,   // files exist with the recorded sizes (cheap: every lookup)
  kHashes,  // and their sha256 matches (reads every byte)
};

// Reads and checks one entry folder. With `expected`, an entry of another key is stale; with
// `current`, an entry built for another ONNX Runtime, provider library or device is stale.
EntryInfo inspect_entry(const std::filesystem::path& entry_dir, Verification verification,
                        const CompileKey* expected = nullptr,
                        const CompileEnvironment* current = nullptr);

struct PruneOptions {
  std::optional<std::chrono::seconds> unused_for;  // remove entries unused this long
  std::optional<std::uintmax_t> max_total_bytes;   // then remove least recently used until under
  bool remove_invalid = true;                      // remove corrupt and stale entries
  bool dry_run = false;
  // How entries are judged corrupt: by their files' sizes (cheap), or by their sha256 as well,
  // which finds what `parley cache verify` finds.
  Verification verification = Verification::kSizes;
};

struct PruneReport {
  std::vector<EntryInfo> removed;
  std::vector<std::string> reasons;   // one per removed entry
  std::vector<EntryInfo> left_alone;  // invalid but not provably parley's: the user decides
  std::uintmax_t bytes_freed = 0;
  std::uintmax_t bytes_kept = 0;
};

class CompileCache {
 public:
  explicit CompileCache(std::filesystem::path root);
  // $PARLEY_COMPILE_CACHE, else ${XDG_CACHE_HOME:-$HOME/.cache}/parley/compiled.
  static std::filesystem::path default_root();
  // `root`, or default_root() when it is empty (what an unset configuration field means).
  static std::filesystem::path root_or_default(const std::filesystem::path& root);

  const std::filesystem::path& root() const { return root_; }
  // Whether root() holds the marker that parley writes when it creates a cache there.
  bool marked() const;
  // Fails, saying what to do, when root() exists but is not a parley cache (no marker): the
  // commands that change or report on a cache call this first.
  void require_marked() const;
  std::filesystem::path entry_dir(const CompileKey& key) const;

  struct Lookup {
    bool hit = false;
    std::filesystem::path artifacts_dir;  // valid on a hit
    std::string note;  // on a miss: why an existing entry was discarded (empty if none existed)
  };
  // A valid entry is a hit (its last-use time is updated). A corrupt or stale one is removed and
  // reported in `note`, so the caller rebuilds it.
  Lookup lookup(const CompileKey& key, Verification verification = Verification::kHashes);
  // Removes the entry for `key` (e.g. the provider failed to load it); returns whether it existed.
  bool invalidate(const CompileKey& key);

  // An entry being built: the provider writes into artifacts_dir(), commit() publishes it. An
  // uncommitted build is removed when destroyed.
  class Build {
   public:
    Build(Build&&) noexcept;
    Build& operator=(Build&&) = delete;
    Build(const Build&) = delete;
    ~Build();
    const std::filesystem::path& artifacts_dir() const { return artifacts_; }
    // Hashes the artifacts, writes the manifest and moves the entry into place; returns the
    // published entry. Throws when the provider wrote nothing (its cache options had no effect).
    EntryInfo commit(double build_seconds);

   private:
    friend class CompileCache;
    Build(CompileKey key, std::filesystem::path staging, std::filesystem::path target);
    CompileKey key_;
    std::filesystem::path staging_;
    std::filesystem::path artifacts_;
    std::filesystem::path target_;
    bool done_ = false;
  };
  Build begin_build(const CompileKey& key);

  // Every entry (and leftover build folder, reported as corrupt), sorted by provider then model;
  // nothing when root() is missing or not marked as a cache.
  std::vector<EntryInfo> list(Verification verification,
                              const CurrentEnvironments* current = nullptr) const;
  // Removes owned entries only; fails (see require_marked()) on a folder that is not a cache.
  PruneReport prune(const PruneOptions& options, std::time_t now,
                    const CurrentEnvironments* current = nullptr);

 private:
  // Creates root() with its marker when it is missing or empty; fails when it holds anything
  // else (the cache will not mix its files into a user's folder).
  void ensure_root() const;

  std::filesystem::path root_;
};

}  // namespace parley::runtime
