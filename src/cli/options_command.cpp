#include <memory>
#include <string>

#include <fmt/format.h>

#include "cli/commands.h"
#include "pipeline/option_table.h"
#include "server/http_api.h"
#include "stream/stream_options.h"

namespace parley::cli {

namespace {

// Which faces offer an option, as the table's rows say it: "cli server c python dask".
std::string faces_of(const pipeline::OptionSpec& spec) {
  std::string faces;
  const auto add = [&faces](bool offered, const char* face) {
    if (offered) faces += faces.empty() ? face : fmt::format(" {}", face);
  };
  add(spec.faces.cli, "cli");
  add(spec.faces.server, "server");
  add(spec.faces.c, "c");
  add(spec.faces.python, "python");
  add(spec.faces.dask, "dask");
  return faces;
}

}  // namespace

void add_options_command(CLI::App& app) {
  auto* command = app.add_subcommand(
      "options",
      "List the diarization options of every face (CLI flag, server field, C field, Python "
      "keyword, parley.distributed flag): the one table they are made from");
  auto json = std::make_shared<bool>(false);
  auto openapi = std::make_shared<bool>(false);
  auto live = std::make_shared<bool>(false);
  command->add_flag("--json", *json, "the table as JSON (what parley_options_json returns)");
  command->add_flag("--stream", *live,
                    "the live stream's options instead (parley stream, the WebSocket of parley "
                    "serve, parley_stream_params, parley.Stream): its own table");
  command->add_flag("--openapi", *openapi,
                    "the OpenAPI document parley serve serves, its form written from the table "
                    "(docs/openapi.json is this output)");
  command->callback([json, openapi, live] {
    if (*openapi) {
      fmt::print("{}", server::openapi_with_options());
      return;
    }
    if (*json) {
      fmt::print("{}",
                 *live ? stream::stream_options_json() : pipeline::diarization_options_json());
      return;
    }
    for (const auto& spec : *live ? stream::stream_options() : pipeline::diarization_options()) {
      const std::string default_text =
          spec.default_value.is_null() ? "none" : spec.default_value.dump();
      fmt::print("{} ({}, default {}; {})\n  {}\n", spec.name, spec.type_name(), default_text,
                 faces_of(spec), spec.help);
      if (!spec.faces_note.empty()) fmt::print("  not everywhere: {}\n", spec.faces_note);
    }
  });
}

}  // namespace parley::cli
