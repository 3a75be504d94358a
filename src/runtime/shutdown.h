#pragma once
// Orderly end of ONNX Runtime use, for the end of main(): provider libraries are unregistered and
// the environment is released while everything they depend on (the CUDA runtime, cuBLAS, cuDNN)
// is still intact. Left to static destruction, the environment would be released after those
// libraries' own exit-time destructors and corrupt the heap (the abort seen after CUDA runs).
#include <string>

namespace parley::runtime {

struct ShutdownReport {
  bool released = false;  // the environment was released
  int providers_unregistered = 0;
  std::string skipped_because;  // not released: why (sessions still alive)
};

// Call once, after the last session is destroyed. With sessions still alive it releases nothing
// (they need the environment); the environment is then never released, which is harmless at
// exit. Later model loads fail with a clear message.
ShutdownReport shutdown_onnx_runtime();

// Runs shutdown_onnx_runtime() when it goes out of scope: put one at the top of main().
class OnnxRuntimeShutdownGuard {
 public:
  OnnxRuntimeShutdownGuard() = default;
  OnnxRuntimeShutdownGuard(const OnnxRuntimeShutdownGuard&) = delete;
  OnnxRuntimeShutdownGuard& operator=(const OnnxRuntimeShutdownGuard&) = delete;
  ~OnnxRuntimeShutdownGuard();
};

}  // namespace parley::runtime
