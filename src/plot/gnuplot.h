#pragma once
// Charts through gnuplot (Debian package gnuplot-nox): parley writes a gnuplot script with its
// data inline and runs the program, so the drawing is gnuplot's, not hand-made graphics.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "core/atomic_file.h"

namespace parley::plot {

enum class ImageFormat { png, svg };

// From the output's extension: .png or .svg; anything else fails saying which are supported.
ImageFormat image_format_for(const std::filesystem::path& output);

// The gnuplot program: $PARLEY_GNUPLOT when set, else `gnuplot` on PATH; nullopt when absent.
std::optional<std::filesystem::path> find_gnuplot();

// find_gnuplot(), or fails naming the Debian package to install. Commands with --plot call it
// (and image_format_for) before long work, so a missing program is found in milliseconds.
std::filesystem::path require_gnuplot();

// A gnuplot double-quoted string literal holding `text` (quotes and backslashes escaped).
std::string gnuplot_string(std::string_view text);

// Runs `body` (plot commands, without terminal or output) with a terminal for `output`'s format
// at width x height pixels, writing `output` as core/atomic_file.h writes outputs (gnuplot draws
// into a temporary folder). Fails when gnuplot is missing (naming the Debian package to install),
// when it reports an error (with its message), or when no image appears.
void render(const std::string& body, const std::filesystem::path& output, int width, int height,
            const OutputOptions& options = {});

}  // namespace parley::plot
