#include "plot/charts.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"
#include "plot/gnuplot.h"

namespace parley::plot {
namespace {

std::vector<std::string> stage_names(const std::vector<StageBar>& bars) {
  std::vector<std::string> names;
  for (const StageBar& bar : bars) {
    for (const auto& [stage, seconds] : bar.seconds.entries()) {
      if (std::find(names.begin(), names.end(), stage) == names.end()) names.push_back(stage);
    }
  }
  return names;
}

double stage_seconds(const StageBar& bar, const std::string& stage) {
  for (const auto& [name, seconds] : bar.seconds.entries()) {
    if (name == stage) return seconds;
  }
  return 0.0;
}

// Stacked bars, one per row of `bars`: each stage's seconds per minute of audio, so that systems
// run on different amounts of audio compare.
std::string stage_panel(const std::vector<StageBar>& bars, const std::string& title) {
  const std::vector<std::string> stages = stage_names(bars);
  if (stages.empty()) return "";
  std::string text = "$stages << EOD\n";
  for (const StageBar& bar : bars) {
    text += gnuplot_string(bar.label);
    const double minutes = bar.audio_seconds / 60.0;
    for (const std::string& stage : stages) {
      text += fmt::format(" {:.6g}", minutes > 0.0 ? stage_seconds(bar, stage) / minutes : 0.0);
    }
    text += "\n";
  }
  text += "EOD\n";
  text += fmt::format("set title {}\n", gnuplot_string(title));
  text +=
      "unset logscale\n"
      "set style data histograms\n"
      "set style histogram rowstacked\n"
      "set style fill solid 0.85 border -1\n"
      "set boxwidth 0.6\n"
      "set ylabel \"seconds per minute of audio\"\n"
      "unset xlabel\n"
      "set yrange [0:*]\n"
      "set xrange [*:*]\n"
      "set xtics autofreq rotate by -25 nomirror\n"
      "set grid ytics\n"
      "set key outside right top vertical maxrows auto\n";
  text += "plot ";
  for (std::size_t i = 0; i < stages.size(); ++i) {
    text += fmt::format("{}$stages using {}{} title {}", i == 0 ? "" : ", ", i + 2,
                        i == 0 ? ":xtic(1)" : "", gnuplot_string(stages[i]));
  }
  return text + "\n";
}

// Tics at 1, 2, 5 times powers of ten inside [low, high], labelled "20x": gnuplot's own log
// tics label only the decades, too few when all points sit within one.
std::string log_tics(double low, double high) {
  std::string tics;
  for (double decade = std::pow(10.0, std::floor(std::log10(low))); decade <= high;
       decade *= 10.0) {
    for (const double factor : {1.0, 2.0, 5.0}) {
      const double value = decade * factor;
      if (value < low || value > high) continue;
      tics += fmt::format("{}\"{:g}x\" {:g}", tics.empty() ? "" : ", ", value, value);
    }
  }
  return "set xtics (" + tics + ")\n";
}

}  // namespace

std::string accuracy_speed_script(const std::vector<SpeedAccuracyPoint>& points,
                                  const std::vector<StageBar>& stages, const std::string& title) {
  if (points.empty()) fail("nothing to plot: no system has a DER and a speed");
  const auto label = [](const SpeedAccuracyPoint& point) {
    return point.speed_twin ? point.label + " (speed twin: DER meaningless)" : point.label;
  };
  const bool any_twin =
      std::any_of(points.begin(), points.end(),
                  [](const SpeedAccuracyPoint& point) { return point.speed_twin; });
  double highest_der = 0.0;
  double lowest_speed = points.front().speed;
  double highest_speed = points.front().speed;
  std::string text = "$points << EOD\n";
  for (const SpeedAccuracyPoint& point : points) {
    text += fmt::format("{} {:.6g} {:.6g}\n", gnuplot_string(label(point)), point.speed,
                        100.0 * point.der);
    highest_der = std::max(highest_der, 100.0 * point.der);
    lowest_speed = std::min(lowest_speed, point.speed);
    highest_speed = std::max(highest_speed, point.speed);
  }
  text += "EOD\n";
  const bool with_stages = !stage_names(stages).empty();
  if (with_stages) text += "set multiplot layout 1,2\n";
  text += fmt::format(
      "set title {}\n",
      gnuplot_string(any_twin ? title + " - speed twin: random speaker embeddings, timing only"
                              : title));
  // Speeds of different systems span decades: a log axis with some room on both sides.
  const double low = std::max(lowest_speed / 2.0, 1e-3);
  const double high = std::max(highest_speed * 2.0, low * 10.0);
  text += fmt::format(
      "set logscale x 10\n"
      "set xrange [{:.6g}:{:.6g}]\n"
      "set yrange [0:{:.6g}]\n"
      "set xlabel \"speed (x real time, log scale; right is faster)\"\n"
      "set ylabel \"DER (%; lower is better)\"\n"
      "set grid xtics ytics\n",
      low, high, std::max(5.0, highest_der * 1.2));
  text += log_tics(low, high);
  // One series per system, named in the key below the chart: labels beside the points would
  // overwrite each other when two systems are close in speed and accuracy.
  text += "set key below vertical maxrows 3 height 2 font \",9\"\nplot ";
  for (std::size_t i = 0; i < points.size(); ++i) {
    text += fmt::format(
        "{}$points every ::{}::{} using 2:3 with points pointtype {} pointsize 1.8 linecolor {} "
        "title {}",
        i == 0 ? "" : ", ", i, i, 5 + 2 * static_cast<int>(i % 4), i + 1,
        gnuplot_string(label(points[i])));
  }
  text += "\n";
  if (with_stages) {
    text += "unset grid\nunset logscale\n";
    text += stage_panel(stages, "time per stage");
    text += "unset multiplot\n";
  }
  return text;
}

std::string stage_time_script(const std::vector<StageBar>& bars, const std::string& title) {
  if (bars.empty() || stage_names(bars).empty()) fail("nothing to plot: no stage times");
  std::string text = "set multiplot layout 1,2\n";
  text += stage_panel(bars, title + ": time per stage");
  double fastest = 0.0;
  text += "$speed << EOD\n";
  for (const StageBar& bar : bars) {
    text += fmt::format("{} {:.6g}\n", gnuplot_string(bar.label), bar.speed);
    fastest = std::max(fastest, bar.speed);
  }
  text += "EOD\n";
  // Headroom above the tallest bar for its value label.
  text += fmt::format("set yrange [0:{:.6g}]\n", fastest > 0.0 ? fastest * 1.2 : 1.0);
  text +=
      "set title \"speed\"\n"
      "set style data histograms\n"
      "set style histogram clustered\n"
      "set style fill solid 0.85 border -1\n"
      "set ylabel \"x real time (higher is faster)\"\n"
      "unset key\n"
      "plot $speed using 2:xtic(1) linecolor rgb \"#2ca02c\", "
      "$speed using 0:2:(sprintf(\"%.1fx\", $2)) with labels offset 0,0.8 font \",9\"\n";
  return text + "unset multiplot\n";
}

void plot_accuracy_speed(const std::vector<SpeedAccuracyPoint>& points,
                         const std::vector<StageBar>& stages, const std::string& title,
                         const std::filesystem::path& output, const OutputOptions& options) {
  const std::string script = accuracy_speed_script(points, stages, title);
  render(script, output, stage_names(stages).empty() ? 800 : 1400, 600, options);
}

void plot_stage_times(const std::vector<StageBar>& bars, const std::string& title,
                      const std::filesystem::path& output, const OutputOptions& options) {
  render(stage_time_script(bars, title), output, 1400, 600, options);
}

}  // namespace parley::plot
