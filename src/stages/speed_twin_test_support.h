#pragma once
// Test-only: the speed twin (tools/make_speed_twin.py: WeSpeaker ResNet34-LM's graph with random
// weights), generated once into the build tree. Needs PARLEY_SOURCE_DIR and
// PARLEY_TEST_OUTPUT_DIR defined by the test target.
#include <cstdlib>
#include <filesystem>
#include <string>

namespace parley::stages::testing {

// The file's path; empty when it could not be generated (python3 without onnx).
inline std::filesystem::path speed_twin_for_tests() {
  const std::filesystem::path path =
      std::filesystem::path(PARLEY_TEST_OUTPUT_DIR) / "resnet34-speed-twin.onnx";
  if (!std::filesystem::exists(path)) {
    std::filesystem::create_directories(path.parent_path());
    const std::string command = "/usr/bin/python3 " PARLEY_SOURCE_DIR
                                "/tools/make_speed_twin.py --output '" +
                                path.string() + "' > /dev/null";
    if (std::system(command.c_str()) != 0) return {};
  }
  return path;
}

}  // namespace parley::stages::testing
