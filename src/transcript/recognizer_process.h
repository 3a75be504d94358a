#pragma once
// Runs the user's speech recognizer (`--asr-cmd "whisper-cli -m M -f {audio} -oj -of {out}"`) as a
// child process while parley diarizes, then finds the transcript it wrote. parley ships no
// recognizer; it only needs the command to write a transcript at {out} (or {out}.<ext>).
//
// No shell runs the command: file names are never parsed by one, so a recording called
// `a$(rm -rf ~).wav` is just a name. A recognizer that needs pipes or redirection is written as
// `sh -c 'SCRIPT "$0" "$1"' {audio} {out}`, which hands the paths to the script as arguments.
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/temporary_directory.h"

namespace parley::transcript {

// The recognizer's argument list: `command` split into words as a shell splits them (blanks
// separate words; '...' keeps everything literally; "..." keeps everything but \" and \\; a
// backslash outside quotes keeps the next character), then {audio} and {out} replaced inside each
// word in one pass (a path that itself contains "{out}" stays as it is). Nothing else is expanded:
// no $VARIABLES, ~, globs, pipes or redirection. Fails when {audio} is missing (the recognizer
// would not know what to transcribe) or a quote is not closed.
std::vector<std::string> recognizer_arguments(const std::string& command,
                                              const std::filesystem::path& audio,
                                              const std::filesystem::path& out);

class RecognizerProcess {
 public:
  // Starts the recognizer in its own process group, with {out} inside a private temporary folder
  // that is removed with this object; standard output goes to standard error so it never mixes
  // with parley's results. Fails at once when the program cannot be started (not found, not
  // executable). While it runs, SIGINT, SIGTERM and SIGHUP stop it (and its children) and remove
  // its transcript before parley ends.
  RecognizerProcess(const std::string& command, const std::filesystem::path& audio);
  // Stops the recognizer (and its children) if it is still running.
  ~RecognizerProcess();
  RecognizerProcess(const RecognizerProcess&) = delete;
  RecognizerProcess& operator=(const RecognizerProcess&) = delete;

  // Waits for the recognizer to finish (at most `timeout`, when set) and returns the transcript
  // file it wrote: {out} itself, or {out}.json/.srt/.vtt/.ctm/.txt (valid while this object
  // lives). Fails with what went wrong: a timeout (the process is killed), a non-zero exit, a
  // signal, or no transcript written.
  std::filesystem::path wait(std::optional<std::chrono::duration<double>> timeout);

  pid_t pid() const { return pid_; }

 private:
  void stop();

  std::string command_;
  TemporaryDirectory work_dir_;
  std::filesystem::path out_;
  pid_t pid_ = -1;
  int signal_slot_ = -1;
};

}  // namespace parley::transcript
