#include "transcript/recognizer_process.h"

#include <signal.h>
#include <sys/wait.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "core/subprocess.h"

namespace parley::transcript {
namespace {

// The names a recognizer may give its transcript, {out} followed by each of these.
constexpr std::array<const char*, 6> kTranscriptSuffixes = {"",     ".json", ".srt",
                                                            ".vtt", ".ctm",  ".txt"};

// What the signal handler needs to stop a running recognizer and remove its files: plain memory,
// because a handler may only call async-signal-safe functions (kill, waitpid, unlink, rmdir).
constexpr std::size_t kPathBytes = 4096;
struct SignalSlot {
  std::atomic<pid_t> pid{0};
  char folder[kPathBytes] = {};
  char out[kPathBytes] = {};
};
std::array<SignalSlot, 4> g_signal_slots;
constexpr std::array<int, 3> kStopSignals = {SIGINT, SIGTERM, SIGHUP};
std::array<struct sigaction, 3> g_previous_actions{};

void remove_slot_files(const SignalSlot& slot) {
  char path[kPathBytes + 8];
  const std::size_t length = std::strlen(slot.out);
  for (const char* suffix : kTranscriptSuffixes) {
    const std::size_t suffix_length = std::strlen(suffix);
    std::memcpy(path, slot.out, length);
    std::memcpy(path + length, suffix, suffix_length + 1);
    ::unlink(path);
  }
  ::rmdir(slot.folder);
}

void stop_recognizers_on_signal(int signal_number, siginfo_t* info, void* context) {
  for (auto& slot : g_signal_slots) {
    const pid_t pid = slot.pid.exchange(0);
    if (pid <= 0) continue;
    ::kill(-pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    remove_slot_files(slot);
  }
  // Then whatever would have happened without parley's handler (by default: the process ends).
  for (std::size_t i = 0; i < kStopSignals.size(); ++i) {
    if (kStopSignals[i] != signal_number) continue;
    const struct sigaction& previous = g_previous_actions[i];
    if ((previous.sa_flags & SA_SIGINFO) != 0) {
      previous.sa_sigaction(signal_number, info, context);
    } else if (previous.sa_handler == SIG_DFL) {
      ::sigaction(signal_number, &previous, nullptr);
      ::raise(signal_number);  // delivered when this handler returns
    } else if (previous.sa_handler != SIG_IGN) {
      previous.sa_handler(signal_number);
    }
  }
}

void install_signal_handlers() {
  static std::once_flag installed;
  std::call_once(installed, [] {
    for (std::size_t i = 0; i < kStopSignals.size(); ++i) {
      struct sigaction current {};
      ::sigaction(kStopSignals[i], nullptr, &current);
      // An ignored signal (nohup, a background job) must stay ignored.
      if ((current.sa_flags & SA_SIGINFO) == 0 && current.sa_handler == SIG_IGN) continue;
      g_previous_actions[i] = current;
      struct sigaction action {};
      action.sa_sigaction = stop_recognizers_on_signal;
      action.sa_flags = SA_SIGINFO | SA_RESTART;
      sigemptyset(&action.sa_mask);
      ::sigaction(kStopSignals[i], &action, nullptr);
    }
  });
}

// The index of the slot now watching `pid`, or -1 when all are taken (then a signal leaves this
// recognizer to the destructor, which does not run; four at once is more than parley starts).
int watch_on_signal(pid_t pid, const std::filesystem::path& folder,
                    const std::filesystem::path& out) {
  const std::string folder_text = folder.string(), out_text = out.string();
  if (folder_text.size() >= kPathBytes || out_text.size() + 8 >= kPathBytes) return -1;
  install_signal_handlers();
  for (std::size_t i = 0; i < g_signal_slots.size(); ++i) {
    auto& slot = g_signal_slots[i];
    pid_t expected = 0;
    // -1 reserves the slot while its paths are written; the handler skips it until the pid lands.
    if (!slot.pid.compare_exchange_strong(expected, -1)) continue;
    std::memcpy(slot.folder, folder_text.c_str(), folder_text.size() + 1);
    std::memcpy(slot.out, out_text.c_str(), out_text.size() + 1);
    slot.pid.store(pid);
    return static_cast<int>(i);
  }
  return -1;
}

// True when the slot still held the recognizer (the signal handler had not taken it).
bool unwatch(int slot) {
  if (slot < 0) return true;
  return g_signal_slots[static_cast<std::size_t>(slot)].pid.exchange(0) > 0;
}

// {audio} and {out} replaced in one left-to-right pass: a replacement is never searched again.
std::string substitute(const std::string& word, const std::string& audio, const std::string& out) {
  std::string result;
  for (std::size_t at = 0; at < word.size();) {
    if (word.compare(at, 7, "{audio}") == 0) {
      result += audio;
      at += 7;
    } else if (word.compare(at, 5, "{out}") == 0) {
      result += out;
      at += 5;
    } else {
      result += word[at++];
    }
  }
  return result;
}

std::vector<std::string> split_words(const std::string& command) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (std::size_t at = 0; at < command.size(); ++at) {
    const char c = command[at];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
      continue;
    }
    in_word = true;
    if (c == '\'') {
      const std::size_t close = command.find('\'', at + 1);
      if (close == std::string::npos) fail("recognizer command '{}': a ' is not closed", command);
      word.append(command, at + 1, close - at - 1);
      at = close;
    } else if (c == '"') {
      for (++at;; ++at) {
        if (at >= command.size()) fail("recognizer command '{}': a \" is not closed", command);
        if (command[at] == '"') break;
        if (command[at] == '\\' && at + 1 < command.size() &&
            (command[at + 1] == '"' || command[at + 1] == '\\')) {
          ++at;
        }
        word += command[at];
      }
    } else if (c == '\\' && at + 1 < command.size()) {
      word += command[++at];
    } else {
      word += c;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

}  // namespace

std::vector<std::string> recognizer_arguments(const std::string& command,
                                              const std::filesystem::path& audio,
                                              const std::filesystem::path& out) {
  std::vector<std::string> words = split_words(command);
  bool names_audio = false;
  for (const auto& word : words)
    names_audio = names_audio || word.find("{audio}") != std::string::npos;
  if (!names_audio) {
    fail(
        "recognizer command '{}': put {{audio}} where the recording's path goes (and {{out}} where "
        "the "
        "transcript should be written)",
        command);
  }
  for (auto& word : words) word = substitute(word, audio.string(), out.string());
  return words;
}

RecognizerProcess::RecognizerProcess(const std::string& command, const std::filesystem::path& audio)
    : command_(command), work_dir_("parley-asr-") {
  const auto stem = audio.stem();
  out_ = work_dir_.path() / (stem.empty() ? std::filesystem::path("transcript") : stem);
  std::vector<std::string> arguments = recognizer_arguments(command, audio, out_);
  SpawnOptions options;
  // The recognizer's own output must not land in parley's standard output (RTTM, JSON).
  options.stdout_to_stderr = true;
  // Stopping it stops the whole group: a shell and the recognizer it started alike.
  options.own_process_group = true;
  pid_ = spawn_process(arguments, options);
  signal_slot_ = watch_on_signal(pid_, work_dir_.path(), out_);
}

void RecognizerProcess::stop() {
  if (pid_ <= 0) return;
  if (unwatch(signal_slot_)) {
    ::kill(-pid_, SIGTERM);
    for (int tries = 0; tries < 10; ++tries) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) != 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ::kill(-pid_, SIGKILL);  // the leader and whatever it started that is still around
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
  signal_slot_ = -1;
  pid_ = -1;
}

RecognizerProcess::~RecognizerProcess() { stop(); }

std::filesystem::path RecognizerProcess::wait(
    std::optional<std::chrono::duration<double>> timeout) {
  if (pid_ <= 0) fail("recognizer command: the recognizer was already waited for");
  const auto start = std::chrono::steady_clock::now();
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(pid_, &status, timeout ? WNOHANG : 0);
    if (done == pid_) break;
    if (done < 0 && errno == EINTR) continue;
    if (done < 0)
      fail("recognizer command: lost track of the recognizer ({})", std::strerror(errno));
    if (timeout && std::chrono::steady_clock::now() - start > *timeout) {
      stop();
      fail("recognizer command '{}': still running after {:.0f} s, stopped (raise the timeout)",
           command_, timeout->count());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  unwatch(signal_slot_);
  // Whatever the recognizer left running in the background must not write into a removed folder.
  ::kill(-pid_, SIGKILL);
  signal_slot_ = -1;
  pid_ = -1;
  if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
    fail("recognizer command '{}' failed: {}", command_, describe_wait_status(status));
  }
  std::error_code ec;
  for (const char* suffix : kTranscriptSuffixes) {
    auto candidate = out_;
    candidate += suffix;
    if (std::filesystem::is_regular_file(candidate, ec)) return candidate;
  }
  fail(
      "recognizer command '{}' finished but wrote no transcript at {{out}} (or "
      "{{out}}.json/.srt/.vtt/.ctm/"
      ".txt); put {{out}} where the recognizer's output path goes",
      command_);
}

}  // namespace parley::transcript
