#pragma once
// Every subcommand of the `parley` tool lives in its own <name>_command.cpp and adds itself to
// the application through one of these functions; main.cpp calls them all.
#include <CLI/CLI.hpp>

namespace parley::cli {

// --log-level and -v/--verbose on the application itself; call it before adding the commands.
void add_log_level_flags(CLI::App& app);
void add_version_command(CLI::App& app);
void add_score_command(CLI::App& app);
void add_providers_command(CLI::App& app);
void add_cache_command(CLI::App& app);
void add_warm_cache_command(CLI::App& app);
void add_audio_info_command(CLI::App& app);
void add_models_command(CLI::App& app);
void add_diarize_command(CLI::App& app);
void add_recluster_command(CLI::App& app);
void add_fuse_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_eval_command(CLI::App& app);
void add_serve_command(CLI::App& app);
// parley options [--json]: the option table (pipeline/option_table.h).
void add_options_command(CLI::App& app);
void add_voiceprint_command(CLI::App& app);
// parley stream FILE|-: live diarization, JSON lines of turn events (docs/live.md).
void add_stream_command(CLI::App& app);

}  // namespace parley::cli
