#include "runtime/stream_capture.h"

#include <dlfcn.h>
#include <spdlog/spdlog.h>

#include <atomic>

namespace parley::runtime {
namespace {

// The driver API's entry points, by their C signatures (CUresult is an int enum). Resolved from the
// driver itself rather than a CUDA runtime, whose soname changes with each major CUDA version
// ONNX Runtime's provider is built for.
using CuInit = int (*)(unsigned int);
using CuThreadExchangeStreamCaptureMode = int (*)(int*);
constexpr int kCuStreamCaptureModeThreadLocal = 1;

struct Driver {
  CuThreadExchangeStreamCaptureMode exchange_mode = nullptr;
};

Driver load_driver() {
  // Kept open for the process's life: the CUDA provider holds the driver loaded anyway.
  void* library = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (library == nullptr) return {};
  auto init = reinterpret_cast<CuInit>(::dlsym(library, "cuInit"));
  auto exchange = reinterpret_cast<CuThreadExchangeStreamCaptureMode>(
      ::dlsym(library, "cuThreadExchangeStreamCaptureMode"));
  if (init == nullptr || exchange == nullptr || init(0) != 0) {
    ::dlclose(library);
    return {};
  }
  return {exchange};
}

const Driver& driver() {
  static const Driver loaded = load_driver();
  return loaded;
}

}  // namespace

bool stream_capture_isolation_available() { return driver().exchange_mode != nullptr; }

bool isolate_stream_capture_of_this_thread() {
  thread_local bool isolated = false;
  if (isolated) return true;
  const Driver& cuda = driver();
  if (cuda.exchange_mode == nullptr) return false;
  int mode = kCuStreamCaptureModeThreadLocal;
  const int status = cuda.exchange_mode(&mode);
  if (status != 0) {
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true)) {
      spdlog::warn(
          "the CUDA driver refused a thread-local stream-capture mode (CUresult {}); new input "
          "shapes on one GPU may then fail while another GPU's run allocates",
          status);
    }
    return false;
  }
  isolated = true;
  return true;
}

}  // namespace parley::runtime
