#pragma once
// CUDA stream capture as the threads that run sessions see it.
//
// cuDNN may capture a stream while it chooses kernels for a new shape (runtime/new_shape_gate.h).
// In CUDA's default, global interaction mode, an allocation or synchronising copy made by ANY
// thread of the process during such a capture fails, and the capture with it (error 901), even
// when that thread works on another GPU. A thread whose own mode is thread-local is prohibited
// only during its own captures. Once every thread that runs parley's sessions is thread-local,
// a capture on one GPU is safe from the work of the others, and new shapes need to run apart
// only from the runs on their own device.
namespace parley::runtime {

// Whether the CUDA driver (libcuda.so.1) is present and initialises, so that threads can be made
// thread-local. Decided once per process.
bool stream_capture_isolation_available();

// Makes the calling thread's stream-capture interaction mode thread-local (once per thread; later
// calls cost a thread-local read). False where isolation is unavailable or the driver refused
// (logged once).
bool isolate_stream_capture_of_this_thread();

}  // namespace parley::runtime
