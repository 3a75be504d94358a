#pragma once
#include <filesystem>

namespace parley {

// The folder holding the running program (symbolic links resolved, from /proc/self/exe); empty
// where the system does not say.
std::filesystem::path executable_folder();

}  // namespace parley
