#include "transcript/recognizer_process.h"

#include <signal.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "core/error.h"
#include "core/subprocess.h"

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
  SpawnOptions options;
  // The recognizer's own output must not land in parley's standard output (RTTM, JSON).
  options.stdout_to_stderr = true;
  // A timeout stops the whole group: the shell and the recognizer it started.
  options.own_process_group = true;
  pid_ = spawn_process({"/bin/sh", "-c", expanded}, options);
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
    fail("recognizer command '{}' failed: {}", command_, describe_wait_status(status));
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
