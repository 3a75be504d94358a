# Every third-party library comes from Debian packages (scripts/setup installs them), except
# ONNX Runtime, which scripts/fetch-onnxruntime unpacks into build/_deps or the user points
# ONNXRUNTIME_ROOT at (an official release folder with include/ and lib/).
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(Eigen3 3.4 REQUIRED NO_MODULE)
# LAPACK's dsygvd diagonalises the PLDA model exactly as scipy.linalg.eigh does (cluster/plda.cpp).
find_package(LAPACK REQUIRED)
if(PARLEY_BUILD_CLI)
  find_package(CLI11 REQUIRED)
endif()
find_package(nlohmann_json 3.10 REQUIRED)
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
pkg_check_modules(SNDFILE REQUIRED IMPORTED_TARGET sndfile)
pkg_check_modules(SOXR REQUIRED IMPORTED_TARGET soxr)
pkg_check_modules(LIBAV REQUIRED IMPORTED_TARGET libavformat libavcodec libavutil libswresample)
pkg_check_modules(LIBZIP REQUIRED IMPORTED_TARGET libzip)
find_package(OpenSSL REQUIRED)
find_package(CURL REQUIRED)
# Kaldi-compatible fbank: real FFTs in double precision.
pkg_check_modules(FFTW3 REQUIRED IMPORTED_TARGET fftw3)
# ONNX graph editing (splitting the speaker-embedding model before statistics pooling) uses the
# ONNX protobuf classes; Debian's ONNX config expects the protobuf::libprotobuf target.
find_package(Protobuf REQUIRED)
find_package(ONNX REQUIRED CONFIG)
# cpp-httplib: `parley serve` and a local HTTP server for the download tests (Debian ships it as a
# compiled library). The library itself does not need it.
if(PARLEY_BUILD_TESTS OR PARLEY_BUILD_CLI)
  pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
endif()

set(ONNXRUNTIME_ROOT "$ENV{ONNXRUNTIME_ROOT}" CACHE PATH "ONNX Runtime folder with include/ and lib/")
if(NOT ONNXRUNTIME_ROOT)
  set(ONNXRUNTIME_ROOT "${PROJECT_BINARY_DIR}/_deps/onnxruntime")
endif()
find_path(ONNXRUNTIME_INCLUDE_DIR onnxruntime_cxx_api.h
          PATHS "${ONNXRUNTIME_ROOT}/include" "${ONNXRUNTIME_ROOT}/include/onnxruntime"
          NO_DEFAULT_PATH)
find_library(ONNXRUNTIME_LIBRARY NAMES onnxruntime PATHS "${ONNXRUNTIME_ROOT}/lib" NO_DEFAULT_PATH)
if(NOT ONNXRUNTIME_INCLUDE_DIR OR NOT ONNXRUNTIME_LIBRARY)
  message(FATAL_ERROR
    "ONNX Runtime not found under '${ONNXRUNTIME_ROOT}'.\n"
    "Run scripts/setup (it fetches ORT 1.29.0 into build/_deps/onnxruntime), or pass "
    "-DONNXRUNTIME_ROOT=/path/to/onnxruntime-linux-x64-1.29.0 (a folder with include/ and lib/).")
endif()
add_library(onnxruntime::onnxruntime SHARED IMPORTED GLOBAL)
set_target_properties(onnxruntime::onnxruntime PROPERTIES
  IMPORTED_LOCATION "${ONNXRUNTIME_LIBRARY}"
  INTERFACE_INCLUDE_DIRECTORIES "${ONNXRUNTIME_INCLUDE_DIR}")
get_filename_component(ONNXRUNTIME_LIBRARY_DIR "${ONNXRUNTIME_LIBRARY}" DIRECTORY)
message(STATUS "ONNX Runtime: ${ONNXRUNTIME_LIBRARY}")
