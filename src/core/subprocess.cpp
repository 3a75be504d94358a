#include "core/subprocess.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

extern char** environ;

namespace parley {
namespace {

// posix_spawn's attribute and file-action objects, released on every path out.
class SpawnSetup {
 public:
  SpawnSetup() {
    posix_spawn_file_actions_init(&actions_);
    posix_spawnattr_init(&attributes_);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions_);
    posix_spawnattr_destroy(&attributes_);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;

  posix_spawn_file_actions_t* actions() { return &actions_; }
  posix_spawnattr_t* attributes() { return &attributes_; }

 private:
  posix_spawn_file_actions_t actions_;
  posix_spawnattr_t attributes_;
};

}  // namespace

pid_t spawn_process(const std::vector<std::string>& argv, const SpawnOptions& options) {
  if (argv.empty()) fail("spawn_process: no program given");
  SpawnSetup setup;
  posix_spawn_file_actions_addopen(setup.actions(), STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  constexpr int kWriteFlags = O_WRONLY | O_CREAT | O_TRUNC;
  if (options.stdout_to_stderr) {
    posix_spawn_file_actions_adddup2(setup.actions(), STDERR_FILENO, STDOUT_FILENO);
  } else if (!options.stdout_path.empty()) {
    posix_spawn_file_actions_addopen(setup.actions(), STDOUT_FILENO, options.stdout_path.c_str(),
                                     kWriteFlags, 0644);
  }
  if (!options.stderr_path.empty()) {
    posix_spawn_file_actions_addopen(setup.actions(), STDERR_FILENO, options.stderr_path.c_str(),
                                     kWriteFlags, 0644);
  }
  if (options.own_process_group) {
    posix_spawnattr_setflags(setup.attributes(), POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(setup.attributes(), 0);
  }
  std::vector<std::string> arguments = argv;
  std::vector<char*> pointers;
  pointers.reserve(arguments.size() + 1);
  for (auto& argument : arguments) pointers.push_back(argument.data());
  pointers.push_back(nullptr);
  pid_t pid = -1;
  const int error = posix_spawnp(&pid, arguments.front().c_str(), setup.actions(),
                                 setup.attributes(), pointers.data(), environ);
  if (error == ENOENT) {
    fail("program '{}' not found (give its full path, or add its folder to PATH)", argv.front());
  }
  if (error == EACCES) fail("'{}' is not executable", argv.front());
  if (error != 0) fail("cannot start {} ({})", argv.front(), std::strerror(error));
  return pid;
}

int run_process(const std::vector<std::string>& argv, const SpawnOptions& options) {
  const pid_t pid = spawn_process(argv, options);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR)
      fail("{}: lost track of the process ({})", argv.front(), std::strerror(errno));
  }
  return status;
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) {
    const int code = WEXITSTATUS(status);
    if (code == 127) return "exit status 127: the command was not found (check the program's path)";
    if (code == 126) return "exit status 126: the command is not executable";
    return "exit status " + std::to_string(code);
  }
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "stopped abnormally";
}

}  // namespace parley
