#include "core/log_subject.h"

#include <memory>
#include <utility>

#include <spdlog/pattern_formatter.h>

namespace parley {
namespace {

thread_local std::string current_subject;

// %* in the pattern: "<subject>: ", or nothing outside any LogSubject.
class SubjectFlag : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg&, const std::tm&,
              spdlog::memory_buf_t& destination) override {
    if (current_subject.empty()) return;
    destination.append(current_subject.data(), current_subject.data() + current_subject.size());
    constexpr std::string_view kSeparator = ": ";
    destination.append(kSeparator.data(), kSeparator.data() + kSeparator.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<SubjectFlag>();
  }
};

}  // namespace

LogSubject::LogSubject(std::string subject) : previous_(std::move(current_subject)) {
  current_subject = subject.empty() ? previous_ : std::move(subject);
}

LogSubject::~LogSubject() { current_subject = std::move(previous_); }

std::string_view LogSubject::current() { return current_subject; }

void show_log_subjects(spdlog::logger& logger) {
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  // spdlog's default pattern ("%+"), spelled out so that the subject goes before the message.
  formatter->add_flag<SubjectFlag>('*').set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%n] [%^%l%$] %*%v");
  logger.set_formatter(std::move(formatter));
}

}  // namespace parley
