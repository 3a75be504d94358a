#include <algorithm>
#include <charconv>
#include <chrono>
#include <ctime>
#include <memory>
#include <string>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/error.h"
#include "core/text.h"
#include "runtime/compile_cache.h"
#include "runtime/device_memory.h"
#include "runtime/provider_discovery.h"

namespace parley::cli {
namespace {

struct CacheArguments {
  std::string cache_dir;
  bool json = false;
  bool fix = false;
  double unused_days = -1;
  std::string max_size;
  bool keep_invalid = false;
  bool dry_run = false;
};

runtime::CompileCache open_cache(const CacheArguments& arguments) {
  return runtime::CompileCache(runtime::CompileCache::root_or_default(arguments.cache_dir));
}

// What this machine would build now, per provider: entries of anything else are stale.
runtime::CurrentEnvironments current_environments() {
  runtime::CurrentEnvironments current;
  for (const auto& status : runtime::provider_statuses()) {
    if (status.available)
      current[std::string(runtime::provider_name(status.id))] = status.environment;
  }
  return current;
}

std::string format_time(std::time_t time) {
  if (time == 0) return "-";
  std::tm utc{};
  gmtime_r(&time, &utc);
  return fmt::format("{:%Y-%m-%d %H:%M}", utc);
}

nlohmann::json entry_json(const runtime::EntryInfo& entry) {
  return {{"dir", entry.dir.string()},
          {"state", runtime::entry_state_name(entry.state)},
          {"reason", entry.reason},
          {"provider", entry.provider},
          {"model", entry.model_name},
          {"inputs", entry.inputs},
          {"bytes", entry.bytes_on_disk},
          {"build_seconds", entry.build_seconds},
          {"created_unix", entry.created},
          {"last_used_unix", entry.last_used},
          {"onnxruntime", entry.environment.ort_version},
          {"device", entry.environment.device}};
}

void print_entries(const runtime::CompileCache& cache,
                   const std::vector<runtime::EntryInfo>& entries) {
  fmt::print("compiled-graph cache: {}\n", cache.root().string());
  if (entries.empty()) {
    fmt::print("  (empty: `parley warm-cache --provider P` fills it)\n");
    return;
  }
  std::uintmax_t total = 0;
  for (const auto& entry : entries) {
    total += entry.bytes_on_disk;
    fmt::print("  {:<9} {:<16} {:<28} {:>9}  built {:>6.1f} s  used {}  {}{}\n",
               entry.provider.empty() ? "?" : entry.provider,
               entry.model_name.empty() ? entry.dir.filename().string() : entry.model_name,
               entry.inputs, runtime::format_bytes(entry.bytes_on_disk), entry.build_seconds,
               format_time(entry.last_used), runtime::entry_state_name(entry.state),
               entry.reason.empty() ? "" : ": " + entry.reason);
  }
  fmt::print("  {}, {}\n", counted(entries.size(), "entry", "entries"),
             runtime::format_bytes(total));
}

std::uintmax_t parse_size(const std::string& text) {
  double value = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  auto [rest, error] = std::from_chars(begin, end, value);
  if (error != std::errc() || value < 0) {
    fail("--max-size {}: expected a size such as 500M or 2G", text);
  }
  std::string unit(rest, end);
  double scale = 1;
  if (unit == "K" || unit == "KiB" || unit == "k")
    scale = 1024.0;
  else if (unit == "M" || unit == "MiB")
    scale = 1024.0 * 1024.0;
  else if (unit == "G" || unit == "GiB")
    scale = 1024.0 * 1024.0 * 1024.0;
  else if (!unit.empty() && unit != "B")
    fail("--max-size {}: unknown unit '{}' (use K, M or G)", text, unit);
  return static_cast<std::uintmax_t>(value * scale);
}

// Invalid folders that prune did not remove because parley cannot prove it wrote them.
void print_left_alone(const runtime::PruneReport& report) {
  for (const auto& entry : report.left_alone) {
    fmt::print("left alone {} (not written by parley: remove it by hand if it is not yours)\n",
               entry.dir.string());
  }
}

void run_list(const CacheArguments& arguments) {
  const auto cache = open_cache(arguments);
  cache.require_marked();
  const auto current = current_environments();
  const auto entries = cache.list(runtime::Verification::kSizes, &current);
  if (arguments.json) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& entry : entries) list.push_back(entry_json(entry));
    fmt::print("{}\n", nlohmann::json{{"root", cache.root().string()}, {"entries", list}}.dump(2));
    return;
  }
  print_entries(cache, entries);
}

void run_verify(const CacheArguments& arguments) {
  auto cache = open_cache(arguments);
  cache.require_marked();
  const auto current = current_environments();
  // What --fix removes is what a hashing prune removes; a dry run of it tells, before anything is
  // removed, which of the faulty entries that is (the others are not provably parley's, or are
  // builds still under way).
  runtime::PruneOptions options;  // corrupt, stale and abandoned entries only
  options.verification = runtime::Verification::kHashes;
  options.dry_run = !arguments.fix;
  const auto entries = cache.list(runtime::Verification::kHashes, &current);
  const auto report = cache.prune(options, std::time(nullptr), &current);
  const auto removable = [&](const runtime::EntryInfo& entry) {
    return std::any_of(report.removed.begin(), report.removed.end(),
                       [&](const runtime::EntryInfo& removed) { return removed.dir == entry.dir; });
  };
  std::size_t bad = 0;
  std::size_t kept_bad = 0;
  for (const auto& entry : entries) {
    if (entry.state == runtime::EntryState::kValid) continue;
    ++bad;
    std::string what_then;
    if (!removable(entry)) {
      ++kept_bad;
      what_then = entry.owned ? " (a build under way: prune removes it once abandoned)"
                              : " (not written by parley: remove it by hand if it is not yours)";
    }
    fmt::print("{}: {}: {}{}\n", entry.dir.string(), runtime::entry_state_name(entry.state),
               entry.reason, what_then);
  }
  if (bad == 0) {
    fmt::print("{}: {}, all valid (every file matches its sha256)\n", cache.root().string(),
               counted(entries.size(), "entry", "entries"));
    return;
  }
  if (!arguments.fix) {
    if (kept_bad == bad) {
      fail(
          "{} of {} compiled-graph cache entries are corrupt or stale, none of them removable "
          "by parley: see each line above",
          bad, entries.size());
    }
    fail(
        "{} of {} compiled-graph cache entries are corrupt or stale; `parley cache verify --fix` "
        "removes {} (rebuilt when next needed){}",
        bad, entries.size(),
        bad - kept_bad == bad ? "them" : counted(bad - kept_bad, "entry", "entries"),
        kept_bad > 0 ? "; the others stay, as each line above says" : "");
  }
  fmt::print("removed {} ({})\n", counted(report.removed.size(), "entry", "entries"),
             runtime::format_bytes(report.bytes_freed));
  if (kept_bad > 0) {
    fail("{} left as each line above says", counted(kept_bad, "faulty entry", "faulty entries"));
  }
}

void run_prune(const CacheArguments& arguments) {
  auto cache = open_cache(arguments);
  runtime::PruneOptions options;
  options.remove_invalid = !arguments.keep_invalid;
  options.dry_run = arguments.dry_run;
  if (arguments.unused_days >= 0) {
    options.unused_for = std::chrono::seconds(static_cast<long>(arguments.unused_days * 86400));
  }
  if (!arguments.max_size.empty()) options.max_total_bytes = parse_size(arguments.max_size);
  const auto current = current_environments();
  const auto report = cache.prune(options, std::time(nullptr), &current);
  for (std::size_t i = 0; i < report.removed.size(); ++i) {
    const auto& entry = report.removed[i];
    fmt::print("{} {} {} {} ({})\n", arguments.dry_run ? "would remove" : "removed",
               entry.provider.empty() ? "?" : entry.provider, entry.model_name, entry.inputs,
               report.reasons[i]);
  }
  print_left_alone(report);
  fmt::print("{} {} in {} entries; {} kept\n", arguments.dry_run ? "would free" : "freed",
             runtime::format_bytes(report.bytes_freed), report.removed.size(),
             runtime::format_bytes(report.bytes_kept));
}

}  // namespace

void add_cache_command(CLI::App& app) {
  auto arguments = std::make_shared<CacheArguments>();
  auto* command = app.add_subcommand(
      "cache",
      "Inspect and clean the compiled-graph cache (MIGraphX programs, TensorRT engines, "
      "CoreML models)");
  command->require_subcommand(1);
  auto add_cache_dir = [&](CLI::App* subcommand) {
    subcommand->add_option("--cache-dir", arguments->cache_dir,
                           "Cache folder (default: $PARLEY_COMPILE_CACHE, else "
                           "${XDG_CACHE_HOME:-~/.cache}/parley/compiled)");
  };

  auto* list = command->add_subcommand("list", "List entries with shape, size, age and state");
  list->add_flag("--json", arguments->json, "Print JSON");
  add_cache_dir(list);
  list->callback([arguments] { run_list(*arguments); });

  auto* verify = command->add_subcommand(
      "verify",
      "Check every entry's files against their sha256; fails when any is corrupt or stale");
  verify->add_flag("--fix", arguments->fix, "Remove corrupt and stale entries instead of failing");
  add_cache_dir(verify);
  verify->callback([arguments] { run_verify(*arguments); });

  auto* prune = command->add_subcommand(
      "prune",
      "Remove corrupt (by file size; `verify --fix` also checks sha256) and stale entries, "
      "entries unused for a while, and the least recently used ones above a size limit");
  prune->add_option("--unused-days", arguments->unused_days,
                    "Remove entries not used for this many days");
  prune->add_option("--max-size", arguments->max_size,
                    "Then remove least recently used entries until the cache is below this size "
                    "(e.g. 2G, 500M)");
  prune->add_flag("--keep-invalid", arguments->keep_invalid,
                  "Keep corrupt and stale entries (removed by default)");
  prune->add_flag("--dry-run", arguments->dry_run, "Only say what would be removed");
  add_cache_dir(prune);
  prune->callback([arguments] { run_prune(*arguments); });
}

}  // namespace parley::cli
