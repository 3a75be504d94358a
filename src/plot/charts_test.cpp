#include "plot/charts.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/error.h"
#include "plot/gnuplot.h"
#include "testing/temporary_directory.h"

namespace parley::plot {
namespace {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream stream(path, std::ios::binary);
  std::ostringstream text;
  text << stream.rdbuf();
  return text.str();
}

std::vector<StageBar> two_systems() {
  StageBar fast{"parley step 2", {}, 120.0, 6.0};
  fast.seconds.add("decode", 0.1);
  fast.seconds.add("segmentation", 2.0);
  fast.seconds.add("embedding", 17.9);
  StageBar peer{"sherpa-onnx \"peer\"", {}, 60.0, 12.0};
  peer.seconds.add("total", 5.0);
  return {fast, peer};
}

TEST(Charts, ScriptsHoldEveryPointStageAndEscapedLabel) {
  const std::vector<SpeedAccuracyPoint> points = {{"parley step 2", 6.0, 0.25},
                                                  {"sherpa-onnx \"peer\"", 12.0, 0.4}};
  const std::string script = accuracy_speed_script(points, two_systems(), "ami-debug");
  EXPECT_NE(script.find("\"parley step 2\" 6 25"), std::string::npos) << script;
  EXPECT_NE(script.find("\"sherpa-onnx \\\"peer\\\"\" 12 40"), std::string::npos) << script;
  // Stage seconds per minute of audio: 17.9 s of embedding over 2 minutes.
  EXPECT_NE(script.find("\"parley step 2\" 0.05 1 8.95 0"), std::string::npos) << script;
  EXPECT_NE(script.find("title \"total\""), std::string::npos);
  EXPECT_THROW(accuracy_speed_script({}, {}, "x"), Error);
}

// A run on the speed twin has a DER that means nothing: the chart says so, not only stderr.
TEST(Charts, ASpeedTwinRunIsNamedAsSuch) {
  const std::vector<SpeedAccuracyPoint> points = {{"parley step 2", 6.0, 0.25, true},
                                                  {"peer", 12.0, 0.4}};
  const std::string script = accuracy_speed_script(points, {}, "ami-debug");
  EXPECT_NE(script.find("\"parley step 2 (speed twin: DER meaningless)\" 6 25"), std::string::npos)
      << script;
  EXPECT_NE(script.find("\"peer\" 12 40"), std::string::npos) << script;
  EXPECT_NE(script.find("set title \"ami-debug - speed twin: random speaker embeddings, timing "
                        "only\""),
            std::string::npos)
      << script;
  const std::string plain = accuracy_speed_script({{"peer", 12.0, 0.4}}, {}, "ami-debug");
  EXPECT_EQ(plain.find("speed twin"), std::string::npos) << plain;
}

TEST(Charts, UnsupportedImageFormatIsRefused) {
  EXPECT_THROW(image_format_for("chart.jpg"), Error);
  EXPECT_EQ(image_format_for("a/chart.svg"), ImageFormat::svg);
}

TEST(Charts, GnuplotDrawsPngAndSvg) {
  if (!find_gnuplot()) GTEST_SKIP() << "gnuplot not installed (Debian package gnuplot-nox)";
  const parley::testing::TemporaryDirectory directory("charts-test");
  const std::vector<SpeedAccuracyPoint> points = {{"parley step 2", 6.0, 0.25},
                                                  {"peer", 12.0, 0.4}};
  plot_accuracy_speed(points, two_systems(), "accuracy against speed", directory / "eval.png");
  const std::string png = read_file(directory / "eval.png");
  ASSERT_GT(png.size(), 1000u);
  EXPECT_EQ(png.substr(1, 3), "PNG");
  plot_stage_times(two_systems(), "bench", directory / "bench.svg");
  const std::string svg = read_file(directory / "bench.svg");
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(svg.find("embedding"), std::string::npos);
}

TEST(Charts, MissingGnuplotNamesThePackage) {
  ::setenv("PARLEY_GNUPLOT", "/nonexistent/gnuplot", 1);
  try {
    plot_stage_times(two_systems(), "bench", "/tmp/never.png");
    ::unsetenv("PARLEY_GNUPLOT");
    FAIL() << "expected an error";
  } catch (const Error& error) {
    ::unsetenv("PARLEY_GNUPLOT");
    EXPECT_NE(std::string(error.what()).find("gnuplot-nox"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace parley::plot
