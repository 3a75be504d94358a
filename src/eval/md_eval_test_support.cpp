#include "eval/md_eval_test_support.h"

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "core/subprocess.h"
#include "eval/text_records.h"

namespace parley::eval::testing {
namespace {

constexpr std::string_view kDefaultMdEval = "/usr/lib/sctk/bin/md-eval.pl";
constexpr std::string_view kCoarseSeconds = "%10.2f secs";
constexpr std::string_view kFineSeconds = "%14.6f secs";

bool perl_runs() {
  SpawnOptions quiet;
  quiet.stdout_path = "/dev/null";
  quiet.stderr_path = "/dev/null";
  try {
    const int status = run_process({"perl", "-e", "1"}, quiet);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
  } catch (const Error&) {
    return false;  // not on PATH
  }
}

// The number after `key` on `line`, if the line holds `key`.
std::optional<double> value_after(std::string_view line, std::string_view key) {
  const std::size_t at = line.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(at + key.size());
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  return parse_number(rest.substr(0, rest.find(' ')), key, "md-eval output");
}

MdEvalScores parse_report(const std::string& report) {
  constexpr std::string_view kHeader = "*** Performance analysis for Speaker Diarization for ";
  MdEvalScores scores;
  ErrorTimes* current = nullptr;
  std::istringstream lines(report);
  std::string line;
  while (std::getline(lines, line)) {
    if (const std::size_t at = line.find(kHeader); at != std::string::npos) {
      std::string condition = line.substr(at + kHeader.size());
      condition = condition.substr(0, condition.rfind(" ***"));
      if (condition == "ALL") {
        current = &scores.overall;
      } else if (condition.starts_with("f=")) {
        current = &scores.files[condition.substr(2)];
      } else {
        fail("unexpected md-eval condition '{}'", condition);
      }
      continue;
    }
    if (current == nullptr) continue;
    if (auto v = value_after(line, "SCORED SPEAKER TIME =")) current->total = *v;
    if (auto v = value_after(line, "MISSED SPEAKER TIME =")) current->missed = *v;
    if (auto v = value_after(line, "FALARM SPEAKER TIME =")) current->false_alarm = *v;
    if (auto v = value_after(line, " SPEAKER ERROR TIME =")) current->confusion = *v;
  }
  return scores;
}

}  // namespace

std::optional<MdEvalRunner> MdEvalRunner::locate(const std::filesystem::path& work_dir,
                                                 std::string& why_not) {
  const char* configured = std::getenv("PARLEY_MD_EVAL");
  const std::filesystem::path original =
      configured != nullptr && *configured != '\0' ? configured : std::string(kDefaultMdEval);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(original, ec)) {
    why_not = fmt::format(
        "md-eval.pl not found at {} (install the Debian package sctk, or set PARLEY_MD_EVAL)",
        original.string());
    return std::nullopt;
  }
  if (!perl_runs()) {
    why_not = "perl is not installed; md-eval.pl needs it";
    return std::nullopt;
  }
  std::string script = read_text_file(original, "md-eval script");
  std::size_t replaced = 0;
  for (std::size_t at = script.find(kCoarseSeconds); at != std::string::npos;
       at = script.find(kCoarseSeconds, at + kFineSeconds.size())) {
    script.replace(at, kCoarseSeconds.size(), kFineSeconds);
    ++replaced;
  }
  if (replaced < 4) {
    fail(
        "{} does not print speaker times as '{}'; this md-eval version is not supported by the "
        "agreement test",
        original.string(), kCoarseSeconds);
  }
  std::filesystem::create_directories(work_dir);
  const std::filesystem::path patched = work_dir / "md-eval-6-decimals.pl";
  std::ofstream(patched, std::ios::binary) << script;
  return MdEvalRunner(original, patched, work_dir);
}

MdEvalScores MdEvalRunner::score(const std::filesystem::path& reference,
                                 const std::filesystem::path& hypothesis,
                                 const std::filesystem::path& uem, double collar,
                                 bool skip_overlap) const {
  const std::filesystem::path out = work_dir_ / "md-eval.out";
  const std::filesystem::path err = work_dir_ / "md-eval.err";
  std::vector<std::string> command = {"perl", patched_.string(),  "-af", "-r", reference.string(),
                                      "-s",   hypothesis.string()};
  if (!uem.empty()) command.insert(command.end(), {"-u", uem.string()});
  if (collar > 0.0) command.insert(command.end(), {"-c", fmt::format("{}", collar)});
  if (skip_overlap) command.push_back("-1");
  SpawnOptions options;
  options.stdout_path = out;
  options.stderr_path = err;
  const int status = run_process(command, options);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fail("md-eval failed ({}): {}\n{}", describe_wait_status(status), fmt::join(command, " "),
         read_text_file(err, "md-eval stderr"));
  }
  MdEvalScores scores = parse_report(read_text_file(out, "md-eval output"));
  if (scores.files.empty()) {
    fail("md-eval printed no per-file scores: {}", fmt::join(command, " "));
  }
  return scores;
}

}  // namespace parley::eval::testing
