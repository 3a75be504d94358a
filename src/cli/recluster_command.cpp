// `parley recluster DIR`: rerun clustering and everything after it from the arrays that
// `parley diarize --save-intermediates DIR` wrote, without running any neural network.
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/diarization_options.h"
#include "cluster/plda.h"
#include "core/error.h"
#include "core/text.h"
#include "models/model_locator.h"
#include "pipeline/diarizer.h"
#include "pipeline/intermediates_io.h"
#include "pipeline/option_values.h"

namespace parley::cli {
namespace {

struct ReclusterArguments {
  std::string directory;
  DiarizationFlags flags;
  std::string uri;
  std::string plda_dir;
};

void run_recluster(const ReclusterArguments& arguments) {
  // The flags as option values, applied as diarize applies them (pipeline/option_values.h); no
  // engine flags here, so the table's defaults stand for those.
  pipeline::DiarizationConfig config;
  pipeline::apply_options(table_values(EngineFlags{}, arguments.flags), config);
  check_format(arguments.flags, false);
  const OutputOptions output_options{.overwrite_read_only = arguments.flags.force};
  check_output_file("--out", arguments.flags.out, output_options);
  const pipeline::DiarizationIntermediates intermediates =
      pipeline::read_model_intermediates(arguments.directory);

  std::optional<cluster::Plda> plda;
  if (config.clustering.method == cluster::ClusteringMethod::kVbx) {
    std::filesystem::path plda_dir = arguments.plda_dir;
    if (plda_dir.empty()) {
      const models::ModelLocator locator(
          models::Registry::builtin(),
          arguments.flags.models_dir
              ? std::optional<std::filesystem::path>(*arguments.flags.models_dir)
              : std::nullopt);
      plda_dir = locator.locate(models::Role::kPlda).path.parent_path();
    }
    plda = cluster::Plda::load(plda_dir);
  }
  std::string uri = arguments.uri;
  // The id diarize gave the recording, else the folder's name.
  if (uri.empty()) uri = pipeline::saved_recording_uri(arguments.directory).value_or("");
  if (uri.empty()) {
    // "out/rec/" names the folder "rec" too (its filename() is empty).
    std::filesystem::path folder =
        std::filesystem::absolute(arguments.directory).lexically_normal();
    if (!folder.has_filename()) folder = folder.parent_path();
    uri = folder.filename().string();
    // README's `--save-intermediates long.d/` names the folder after the recording plus ".d".
    if (uri.size() > 2 && uri.ends_with(".d")) uri.resize(uri.size() - 2);
  }
  if (uri.empty()) uri = "audio";
  StageTimes times;
  const pipeline::DiarizationResult result =
      pipeline::diarize_from_embeddings(intermediates, config, plda ? &*plda : nullptr, uri, times);
  write_output(format_result(result, arguments.flags), arguments.flags.out, output_options);
  if (!arguments.flags.quiet) {
    fmt::print(stderr, "{}: {}, {} (clustering {:.3f} s)\n", uri,
               counted(result.speaker_count, "speaker"), counted(result.turns.size(), "turn"),
               times.total());
  }
}

}  // namespace

void add_recluster_command(CLI::App& app) {
  auto arguments = std::make_shared<ReclusterArguments>();
  auto* command = app.add_subcommand(
      "recluster",
      "Rerun clustering and reconstruction from `diarize --save-intermediates` output");
  command->add_option("directory", arguments->directory, "folder written by --save-intermediates")
      ->required();
  add_diarization_flags(*command, arguments->flags);
  command->add_option("--uri", arguments->uri,
                      "recording id in the output (default: the one diarize saved, else the folder "
                      "name without .d)");
  command->add_option(
      "--plda", arguments->plda_dir,
      "folder with plda.npz and xvec_transform.npz (default: found through --models)");
  command->callback([arguments] { run_recluster(*arguments); });
}

}  // namespace parley::cli
