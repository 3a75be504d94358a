#include "cli/identity_options.h"

#include "identity/named_output.h"
#include "pipeline/result_writer.h"

namespace parley::cli {

// The identity options are the option table's (pipeline/option_table.h): their flags, help,
// defaults and checks.
void add_threshold_flag(CLI::App& command, double& threshold) {
  add_table_flag(command, "identify_threshold", threshold);
}

void add_identity_flags(CLI::App& command, IdentityFlags& flags) {
  add_table_flag(command, "voiceprints", flags.voiceprints)->check(CLI::ExistingFile);
  add_threshold_flag(command, flags.threshold);
  add_table_flag(command, "link_speakers", flags.link_speakers);
  add_table_flag(command, "speakers_table", flags.speakers_table);
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
  return namer_.format(std::move(result), pipeline::result_format_or_default(flags.format),
                       options);
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
                                 pipeline::result_format_or_default(flags.format), options);
}

}  // namespace parley::cli
