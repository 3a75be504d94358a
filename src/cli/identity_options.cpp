#include "cli/identity_options.h"

#include "identity/named_output.h"

namespace parley::cli {

void add_threshold_flag(CLI::App& command, double& threshold) {
  command
      .add_option("--identify-threshold", threshold,
                  "cosine score at or above which a speaker and a voiceprint match (-1 to 1; "
                  "`parley voiceprint evaluate` measures it on labelled recordings)")
      ->check(number_between(-1.0, 1.0))
      ->capture_default_str();
}

void add_identity_flags(CLI::App& command, IdentityFlags& flags) {
  command
      .add_option("--voiceprints", flags.voiceprints,
                  "speaker library (from `parley voiceprint add`): name the speakers that "
                  "match one of its voiceprints")
      ->check(CLI::ExistingFile);
  add_threshold_flag(command, flags.threshold);
  command.add_flag("--link-speakers", flags.link_speakers,
                   "give one speaker the same global label in every recording of the run, and "
                   "write a speakers table (names from --voiceprints win)");
  command.add_option("--speakers-table", flags.speakers_table,
                     "where --link-speakers writes its table (default: <out-dir>/speakers.tsv)");
}

ResultNamer::ResultNamer(const IdentityFlags& flags, const std::filesystem::path& embedding_model)
    : threshold_(flags.threshold) {
  if (flags.naming())
    namer_ = identity::LibraryNamer(flags.voiceprints, flags.threshold, embedding_model);
}

std::string ResultNamer::format(pipeline::DiarizationResult result,
                                const DiarizationFlags& flags) const {
  check_format(flags, false);
  pipeline::ResultFormatOptions options;
  options.exclusive = flags.exclusive;
  return namer_.format(std::move(result), flags.format.empty() ? "rttm" : flags.format, options);
}

std::function<identity::Identification(pipeline::DiarizationResult&)> library_identifier(
    const std::string& library, double threshold, const std::filesystem::path& embedding_model) {
  return identity::library_identifier(library, threshold, embedding_model);
}

std::string format_linked(pipeline::DiarizationResult result, const identity::Linking& linking,
                          std::size_t index, const DiarizationFlags& flags) {
  check_format(flags, false);
  pipeline::ResultFormatOptions options;
  options.exclusive = flags.exclusive;
  return identity::format_linked(std::move(result), linking, index,
                                 flags.format.empty() ? "rttm" : flags.format, options);
}

}  // namespace parley::cli
