#include <cstdio>
#include <exception>
#include <filesystem>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <spdlog/cfg/env.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "cli/flag_names.h"
#include "core/error.h"
#include "core/progress.h"
#include "core/version.h"
#include "runtime/shutdown.h"

int main(int argc, char** argv) {
  // Destroyed last: releases ONNX Runtime and its provider libraries in order before exit.
  const parley::runtime::OnnxRuntimeShutdownGuard onnx_runtime_shutdown;
  // Standard output carries results (RTTM, JSON); every log line goes to standard error.
  // Multi-threaded sink: the corpus engine's stages log from their own threads. Lines go above a
  // progress line on the terminal, never glued onto it.
  spdlog::set_default_logger(std::make_shared<spdlog::logger>(
      "parley", parley::progress_aware_sink(std::make_shared<spdlog::sinks::stderr_color_sink_mt>(),
                                            stderr)));
  // SPDLOG_LEVEL=debug (or info, warn...) for a diagnosis; --log-level, -v and -q still win.
  spdlog::cfg::load_env_levels();
  CLI::App app{"parley: who spoke when, on your own hardware (pyannote community-1 pipeline)",
               "parley"};
  // The same words as `parley version`.
  app.set_version_flag("--version", fmt::format("parley {}", parley::kVersion));
  app.require_subcommand(1);
  parley::cli::add_log_level_flags(app);
  parley::cli::add_diarize_command(app);
  parley::cli::add_stream_command(app);
  parley::cli::add_recluster_command(app);
  parley::cli::add_fuse_command(app);
  parley::cli::add_bench_command(app);
  parley::cli::add_eval_command(app);
  parley::cli::add_serve_command(app);
  parley::cli::add_options_command(app);
  parley::cli::add_voiceprint_command(app);
  parley::cli::add_version_command(app);
  parley::cli::add_score_command(app);
  parley::cli::add_providers_command(app);
  parley::cli::add_cache_command(app);
  parley::cli::add_warm_cache_command(app);
  parley::cli::add_audio_info_command(app);
  parley::cli::add_models_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    // --help and --version end here too (exit status 0).
    if (error.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(error);
    // Usage errors (an unknown flag, a value out of range) exit 2, failures 1.
    // CLI11 takes a file named "-dash.wav" for a flag and then says the audio is missing.
    for (int i = 1; i < argc; ++i) {
      const std::string argument = argv[i];
      std::error_code ec;
      if (argument.size() > 1 && argument[0] == '-' &&
          std::filesystem::is_regular_file(argument, ec)) {
        fmt::print(stderr,
                   "parley: error: '{}' reads as an option because its name starts with '-': "
                   "write ./{} (or put -- before the files)\n",
                   argument, argument);
        return 2;
      }
    }
    fmt::print(stderr, "parley: error: {} (see --help)\n", error.what());
    return 2;
  } catch (const parley::Error& error) {
    fmt::print(stderr, "parley: error: {}\n", parley::cli::with_flag_names(error.what()));
    return 1;
  } catch (const std::exception& error) {
    fmt::print(stderr, "parley: internal error: {}\n", error.what());
    return 3;
  }
  return 0;
}
