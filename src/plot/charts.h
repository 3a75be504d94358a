#pragma once
// The two charts `parley eval --plot` and `parley bench --plot` draw (through gnuplot):
//   eval:  accuracy against speed, one point per system or mode (DER % over x real time, log
//          scale), beside the time each system spends per stage (seconds per minute of audio);
//   bench: time per stage for each recording or mode, beside its speed (x real time).
#include <filesystem>
#include <string>
#include <vector>

#include "core/atomic_file.h"
#include "core/stage_timer.h"

namespace parley::plot {

struct SpeedAccuracyPoint {
  std::string label;
  double speed = 0.0;  // audio seconds per wall second (x real time)
  double der = 0.0;    // fraction
  // Diarized with the speed twin (random embedding weights): its DER means nothing, and the
  // chart says so beside its name and in the title.
  bool speed_twin = false;
};

struct StageBar {
  std::string label;
  StageTimes seconds;  // per stage
  double audio_seconds = 0.0;
  double speed = 0.0;  // audio seconds per wall second (x real time)
};

// The gnuplot commands of each chart (exposed for tests; render() draws them).
std::string accuracy_speed_script(const std::vector<SpeedAccuracyPoint>& points,
                                  const std::vector<StageBar>& stages, const std::string& title);
std::string stage_time_script(const std::vector<StageBar>& bars, const std::string& title);

void plot_accuracy_speed(const std::vector<SpeedAccuracyPoint>& points,
                         const std::vector<StageBar>& stages, const std::string& title,
                         const std::filesystem::path& output, const OutputOptions& options = {});
void plot_stage_times(const std::vector<StageBar>& bars, const std::string& title,
                      const std::filesystem::path& output, const OutputOptions& options = {});

}  // namespace parley::plot
