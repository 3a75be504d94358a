#pragma once
// Which recording a log line is about, for lines written deep in the library that cannot name it
// themselves ("clustering: only 0 usable embedding(s)..."): while a LogSubject lives on a thread,
// the lines that thread logs through a logger set up by show_log_subjects start with
// "<subject>: ". The corpus engine runs several recordings at once on its threads, so a warning
// without its recording's name cannot be traced back to a file.
#include <string>
#include <string_view>

#include <spdlog/logger.h>

namespace parley {

class LogSubject {
 public:
  // An empty subject leaves the lines as they are; subjects nest (the innermost is shown).
  explicit LogSubject(std::string subject);
  ~LogSubject();
  LogSubject(const LogSubject&) = delete;
  LogSubject& operator=(const LogSubject&) = delete;

  // The calling thread's innermost subject; empty when none.
  static std::string_view current();

 private:
  std::string previous_;
};

// Gives `logger` spdlog's default pattern with the calling thread's subject before each message.
void show_log_subjects(spdlog::logger& logger);

}  // namespace parley
