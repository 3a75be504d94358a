#include "plot/gnuplot.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "core/error.h"
#include "core/subprocess.h"
#include "core/temporary_directory.h"

namespace parley::plot {
namespace {

bool is_executable(const std::filesystem::path& path) {
  std::error_code error;
  return std::filesystem::is_regular_file(path, error) && ::access(path.c_str(), X_OK) == 0;
}

std::string read_all(const std::filesystem::path& path) {
  std::ifstream stream(path, std::ios::binary);
  std::ostringstream text;
  text << stream.rdbuf();
  return text.str();
}

}  // namespace

ImageFormat image_format_for(const std::filesystem::path& output) {
  const std::string extension = output.extension().string();
  if (extension == ".png") return ImageFormat::png;
  if (extension == ".svg") return ImageFormat::svg;
  fail("chart {}: charts are written as .png or .svg; name the file accordingly", output.string());
}

std::optional<std::filesystem::path> find_gnuplot() {
  if (const char* override_path = std::getenv("PARLEY_GNUPLOT");
      override_path != nullptr && *override_path != '\0') {
    if (is_executable(override_path)) return std::filesystem::path(override_path);
    return std::nullopt;
  }
  const char* path_variable = std::getenv("PATH");
  std::string_view directories = path_variable != nullptr ? path_variable : "/usr/bin:/bin";
  while (true) {
    const std::size_t colon = directories.find(':');
    const std::string_view directory = directories.substr(0, colon);
    if (!directory.empty()) {
      const std::filesystem::path candidate = std::filesystem::path(directory) / "gnuplot";
      if (is_executable(candidate)) return candidate;
    }
    if (colon == std::string_view::npos) break;
    directories.remove_prefix(colon + 1);
  }
  return std::nullopt;
}

std::filesystem::path require_gnuplot() {
  const std::optional<std::filesystem::path> gnuplot = find_gnuplot();
  if (!gnuplot) {
    fail(
        "charts need gnuplot, which was not found{}; install the Debian package gnuplot-nox "
        "(sudo apt-get install gnuplot-nox) or set PARLEY_GNUPLOT to the program",
        std::getenv("PARLEY_GNUPLOT") != nullptr ? " at $PARLEY_GNUPLOT" : " on PATH");
  }
  return *gnuplot;
}

std::string gnuplot_string(std::string_view text) {
  std::string literal = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') literal += '\\';
    literal += c;
  }
  return literal + "\"";
}

void render(const std::string& body, const std::filesystem::path& output, int width, int height,
            const OutputOptions& options) {
  const ImageFormat format = image_format_for(output);
  const std::optional<std::filesystem::path> gnuplot = require_gnuplot();
  check_output_destination(output, options);
  const TemporaryDirectory work("parley-plot-");
  const std::filesystem::path image =
      work / (format == ImageFormat::png ? "chart.png" : "chart.svg");
  // "noenhanced": file names and labels such as SPEAKER_00 are shown as written, not with
  // subscripts.
  const std::string terminal =
      format == ImageFormat::png
          ? fmt::format("set terminal pngcairo noenhanced size {},{} font \"sans,10\"", width,
                        height)
          : fmt::format(
                "set terminal svg noenhanced size {},{} font \"sans,10\" background "
                "\"white\"",
                width, height);
  const std::string script = fmt::format("{}\nset output {}\n{}\nunset output\n", terminal,
                                         gnuplot_string(image.string()), body);
  const std::filesystem::path script_path = work / "chart.gp";
  const std::filesystem::path errors_path = work / "gnuplot.err";
  std::ofstream(script_path, std::ios::binary) << script;
  SpawnOptions spawn;
  spawn.stdout_path = "/dev/null";
  spawn.stderr_path = errors_path;
  const int status = run_process({gnuplot->string(), script_path.string()}, spawn);
  const std::string errors = read_all(errors_path);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fail("gnuplot ({}) failed drawing {}: {}", gnuplot->string(), output.string(),
         errors.empty() ? std::string("no message") : errors);
  }
  const std::string drawn = read_all(image);
  if (drawn.empty()) {
    fail("gnuplot ran but drew no image for {}{}{}", output.string(), errors.empty() ? "" : ": ",
         errors);
  }
  write_file_atomically(output, drawn, options);
}

}  // namespace parley::plot
