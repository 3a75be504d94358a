// The global verbosity flags: --log-level LEVEL and -v/--verbose, beside each command's -q.
#include <memory>
#include <string>

#include <spdlog/spdlog.h>

#include "cli/commands.h"

namespace parley::cli {
namespace {

struct LogFlags {
  std::string level;  // empty: SPDLOG_LEVEL, else info
  int verbose = 0;
};

// Whether the command that runs (or one of its subcommands) was given -q/--quiet.
bool quiet_given(const CLI::App& app) {
  for (const CLI::App* command : app.get_subcommands()) {
    const CLI::Option* quiet = command->get_option_no_throw("--quiet");
    if ((quiet != nullptr && quiet->count() > 0) || quiet_given(*command)) return true;
  }
  return false;
}

}  // namespace

void add_log_level_flags(CLI::App& app) {
  // The flags are the application's, and fall through from every command: `parley -v diarize`
  // and `parley diarize a.wav -v` are the same. Set before the commands are added (they inherit
  // it).
  app.fallthrough();
  auto flags = std::make_shared<LogFlags>();
  app.add_option("--log-level", flags->level,
                 "what is logged on standard error: trace, debug, info (default), warn, error or "
                 "off; overrides $SPDLOG_LEVEL; -q (errors only) wins over it")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}))
      ->type_name("LEVEL");
  app.add_flag("-v,--verbose", flags->verbose,
               "more detail on standard error: -v logs at debug level, -vv at trace level");
  // Runs once everything is parsed and before the command's callback, so the level holds for the
  // whole command. -q has set the level to error already (diarization_options.cpp).
  app.parse_complete_callback([&app, flags] {
    if (quiet_given(app)) return;
    if (!flags->level.empty()) {
      spdlog::set_level(spdlog::level::from_str(flags->level));
    } else if (flags->verbose > 0) {
      spdlog::set_level(flags->verbose == 1 ? spdlog::level::debug : spdlog::level::trace);
    }
  });
}

}  // namespace parley::cli
