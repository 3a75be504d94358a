#include "runtime/shutdown.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "runtime/onnx_session.h"
#include "runtime/provider_attach.h"

namespace parley::runtime {

ShutdownReport shutdown_onnx_runtime() {
  ShutdownReport report;
  if (const int live = live_session_count(); live > 0) {
    report.skipped_because = fmt::format("{} ONNX Runtime session(s) still alive", live);
    spdlog::debug("ONNX Runtime shutdown skipped: {}", report.skipped_because);
    return report;
  }
  report.providers_unregistered = static_cast<int>(unregister_plugin_libraries().size());
  release_ort_env();
  report.released = true;
  return report;
}

OnnxRuntimeShutdownGuard::~OnnxRuntimeShutdownGuard() {
  try {
    shutdown_onnx_runtime();
  } catch (...) {
    // A destructor must not throw; at worst the environment is not released, as before.
  }
}

}  // namespace parley::runtime
