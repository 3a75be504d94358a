#pragma once
// Starting other programs (a speech recognizer, gnuplot, md-eval.pl) without a shell in between
// unless the caller asks for one: posix_spawn, standard input from /dev/null, standard output and
// error where the caller says.
#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace parley {

struct SpawnOptions {
  std::filesystem::path stdout_path;  // empty: inherited
  std::filesystem::path stderr_path;  // empty: inherited
  // The child's standard output goes to parley's standard error (which stays free of results).
  bool stdout_to_stderr = false;
  // The child leads a process group of its own, so that kill(-pid) reaches its children too.
  bool own_process_group = false;
};

// Starts argv[0] (searched on PATH when it holds no '/') with `argv`; returns its process id.
// Fails naming the program when it cannot be started.
pid_t spawn_process(const std::vector<std::string>& argv, const SpawnOptions& options = {});

// spawn_process, then waits for it; returns waitpid's status (WIFEXITED, WEXITSTATUS...).
int run_process(const std::vector<std::string>& argv, const SpawnOptions& options = {});

// "exit status 3", "killed by signal 9", ... for a waitpid status (127: command not found).
std::string describe_wait_status(int status);

}  // namespace parley
