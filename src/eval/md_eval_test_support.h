#pragma once
// Test support: runs NIST md-eval.pl (Debian package sctk) and reads back its per-file speaker
// diarization times, the reference parley's scorer is checked against.
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "eval/der.h"

namespace parley::eval::testing {

struct MdEvalScores {
  std::map<std::string, ErrorTimes> files;  // by file id
  ErrorTimes overall;
};

class MdEvalRunner {
 public:
  // md-eval.pl from $PARLEY_MD_EVAL or /usr/lib/sctk/bin/md-eval.pl, run by perl. md-eval prints
  // times with 2 decimals, too coarse to compare rates to 0.01 percentage points, so a copy whose
  // speaker-diarization report prints 6 decimals is written to `work_dir` (nothing else in the
  // script changes). Empty, with the reason in `why_not`, when md-eval or perl is missing.
  static std::optional<MdEvalRunner> locate(const std::filesystem::path& work_dir,
                                            std::string& why_not);

  // `collar` is md-eval's -c (seconds on each side of reference boundaries), `skip_overlap`
  // its -1; `uem` may be empty. Fails with md-eval's stderr when it rejects its input.
  MdEvalScores score(const std::filesystem::path& reference,
                     const std::filesystem::path& hypothesis, const std::filesystem::path& uem,
                     double collar, bool skip_overlap) const;

  const std::filesystem::path& original_script() const { return original_; }

 private:
  MdEvalRunner(std::filesystem::path original, std::filesystem::path patched,
               std::filesystem::path work_dir)
      : original_(std::move(original)),
        patched_(std::move(patched)),
        work_dir_(std::move(work_dir)) {}

  std::filesystem::path original_;
  std::filesystem::path patched_;
  std::filesystem::path work_dir_;
};

}  // namespace parley::eval::testing
