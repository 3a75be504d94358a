#include "transcript/recognizer_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

#include "core/error.h"

extern char** environ;

namespace parley::transcript {
namespace {

std::string shell_quote(const std::string& text) {
  std::string quoted = "'";
  for (const char c : text) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

void replace_all(std::string& text, const std::string& pattern, const std::string& replacement) {
  for (std::size_t at = text.find(pattern); at != std::string::npos;
       at = text.find(pattern, at + replacement.size())) {
    text.replace(at, pattern.size(), replacement);
  }
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) {
    const int code = WEXITSTATUS(status);
    if (code == 127) return "exit status 127: the command was not found (check the program's path)";
    if (code == 126) return "exit status 126: the command is not executable";
    return "exit status " + std::to_string(code);
  }
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "stopped abnormally";
}

}  // namespace

std::string expand_recognizer_command(const std::string& command,
                                      const std::filesystem::path& audio,
                                      const std::filesystem::path& out) {
  if (command.find("{audio}") == std::string::npos) {
    fail(
        "recognizer command '{}': put {{audio}} where the recording's path goes (and {{out}} where "
        "the "
        "transcript should be written)",
        command);
  }
  std::string expanded = command;
  replace_all(expanded, "{audio}", shell_quote(audio.string()));
  replace_all(expanded, "{out}", shell_quote(out.string()));
  return expanded;
}

RecognizerProcess::RecognizerProcess(const std::string& command, const std::filesystem::path& audio,
                                     const std::filesystem::path& out)
    : command_(command), out_(out) {
  const std::string expanded = expand_recognizer_command(command, audio, out);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // The recognizer's own output must not land in parley's standard output (RTTM, JSON).
  posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  std::string shell = "/bin/sh", dash_c = "-c", script = expanded;
  std::vector<char*> argv = {shell.data(), dash_c.data(), script.data(), nullptr};
  const int error = posix_spawn(&pid_, shell.c_str(), &actions, &attributes, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (error != 0) {
    pid_ = -1;
    fail("recognizer command: could not start /bin/sh ({})", std::strerror(error));
  }
}

RecognizerProcess::~RecognizerProcess() {
  if (pid_ > 0) {
    ::kill(-pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
}

std::filesystem::path RecognizerProcess::wait(
    std::optional<std::chrono::duration<double>> timeout) {
  if (pid_ <= 0) fail("recognizer command: the recognizer was already waited for");
  const auto start = std::chrono::steady_clock::now();
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(pid_, &status, timeout ? WNOHANG : 0);
    if (done == pid_) break;
    if (done < 0)
      fail("recognizer command: lost track of the recognizer ({})", std::strerror(errno));
    if (timeout && std::chrono::steady_clock::now() - start > *timeout) {
      ::kill(-pid_, SIGTERM);
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      ::kill(-pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      pid_ = -1;
      fail("recognizer command '{}': still running after {:.0f} s, stopped (raise the timeout)",
           command_, timeout->count());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  pid_ = -1;
  if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
    fail("recognizer command '{}' failed: {}", command_, describe_status(status));
  }
  std::error_code ec;
  if (std::filesystem::is_regular_file(out_, ec)) return out_;
  for (const char* extension : {".json", ".srt", ".vtt", ".ctm", ".txt"}) {
    auto candidate = out_;
    candidate += extension;
    if (std::filesystem::is_regular_file(candidate, ec)) return candidate;
  }
  fail(
      "recognizer command '{}' finished but wrote no transcript at {} (or {}.json/.srt/.vtt/.ctm); "
      "put {{out}} where the recognizer's output path goes",
      command_, out_.string(), out_.string());
}

}  // namespace parley::transcript
