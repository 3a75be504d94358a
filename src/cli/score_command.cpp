#include <cstdio>
#include <limits>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "cli/commands.h"
#include "core/error.h"
#include "eval/der.h"
#include "eval/der_report.h"
#include "eval/rttm.h"
#include "eval/uem.h"

namespace parley::cli {
namespace {

struct ScoreArguments {
  std::string reference;
  std::string hypothesis;
  std::string uem;
  double collar = 0.0;
  bool skip_overlap = false;
  std::string convention;
  std::string implicit_uem = "union";
  bool json = false;
};

void run_score(const ScoreArguments& arguments) {
  eval::ScoringOptions options;
  if (!arguments.convention.empty()) {
    options = eval::scoring_options(eval::parse_convention(arguments.convention));
  } else {
    options.collar = arguments.collar;
    options.skip_overlap = arguments.skip_overlap;
  }
  options.implicit_uem = arguments.implicit_uem == "reference"
                             ? eval::ImplicitUem::reference
                             : eval::ImplicitUem::reference_and_hypothesis;

  const std::vector<eval::Turn> reference = eval::read_rttm(arguments.reference);
  const std::vector<eval::Turn> hypothesis = eval::read_rttm(arguments.hypothesis);
  std::optional<eval::Uem> uem;
  if (!arguments.uem.empty()) uem = eval::read_uem(arguments.uem);
  if (reference.empty()) {
    fail("reference '{}' has no SPEAKER lines; pass the reference RTTM with --ref",
         arguments.reference);
  }

  const eval::DerReport report =
      eval::score_diarization(reference, hypothesis, uem ? &*uem : nullptr, options);
  for (const std::string& warning : eval::unmatched_file_warnings(report)) {
    fmt::print(stderr, "parley: warning: {}\n", warning);
  }
  if (arguments.json) {
    fmt::print("{}\n", eval::der_report_json(report).dump(2));
  } else {
    fmt::print("{}", eval::format_der_table(report));
  }
}

}  // namespace

void add_score_command(CLI::App& app) {
  auto arguments = std::make_shared<ScoreArguments>();
  auto* command = app.add_subcommand(
      "score",
      "Diarization error rate of a hypothesis RTTM against a reference RTTM, per file and in "
      "total, with NIST md-eval.pl's arithmetic. Without --uem the scored region is by default "
      "that of pyannote.metrics and dscore (first to last turn of reference or hypothesis); "
      "--implicit-uem reference scores what md-eval.pl without -u scores (docs/scoring.md)");
  command->add_option("--ref", arguments->reference, "Reference RTTM (the human annotation)")
      ->required();
  command->add_option("--hyp", arguments->hypothesis, "Hypothesis RTTM (the system output)")
      ->required();
  auto* uem = command->add_option("--uem", arguments->uem,
                                  "UEM file: the regions of each file to score (default: see "
                                  "--implicit-uem)");
  auto* collar = command
                     ->add_option("--collar", arguments->collar,
                                  "Seconds left unscored on each side of every reference "
                                  "boundary, as md-eval -c and dscore --collar (pyannote.metrics' "
                                  "collar is twice this)")
                     ->check(CLI::Validator(
                         [](std::string& text) -> std::string {
                           // Not a number: NaN, which eval::collar_problem refuses too.
                           double seconds = std::numeric_limits<double>::quiet_NaN();
                           try {
                             seconds = std::stod(text);
                           } catch (const std::exception&) {
                           }
                           return eval::collar_problem(seconds);
                         },
                         "SECONDS"))
                     ->default_val(0.0);
  auto* skip_overlap =
      command->add_flag("--skip-overlap", arguments->skip_overlap,
                        "Do not score regions where reference speakers overlap (md-eval -1)");
  command
      ->add_option("--convention", arguments->convention,
                   "Published setting: strict (collar 0, overlap scored), voxconverse (collar "
                   "0.25, overlap scored) or lenient (collar 0.25, overlap skipped)")
      ->check(CLI::IsMember({"strict", "voxconverse", "lenient"}))
      ->excludes(collar)
      ->excludes(skip_overlap);
  command
      ->add_option("--implicit-uem", arguments->implicit_uem,
                   "Scored region without --uem: union = first to last turn of reference or "
                   "hypothesis (pyannote.metrics, dscore), reference = first to last reference "
                   "turn (md-eval.pl without -u)")
      ->check(CLI::IsMember({"union", "reference"}))
      ->excludes(uem)
      ->default_val("union");
  command->add_flag("--json", arguments->json,
                    "Print JSON: per file and total, der/missed/false_alarm/confusion as "
                    "fractions and total as seconds of reference speech");
  command->callback([arguments] { run_score(*arguments); });
}

}  // namespace parley::cli
