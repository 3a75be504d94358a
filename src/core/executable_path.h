#pragma once
#include <filesystem>

namespace parley {

// The folder holding the running program (symbolic links resolved, from /proc/self/exe); empty
// where the system does not say.
std::filesystem::path executable_folder();

// The folder holding the binary this code was linked into: libparley's folder when parley runs as
// a library (a C program, the Python package), the executable's folder when it is linked into a
// program (the parley command). Symbolic links resolved; empty where the system does not say.
std::filesystem::path code_folder();

}  // namespace parley
