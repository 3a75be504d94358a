#pragma once
// The library names configuration fields in its messages ("step_seconds must be in (0, 10]");
// the command line speaks in flags. This is the one place that maps the first to the second.
#include <string>
#include <string_view>

namespace parley::cli {

// `message` with every configuration field the CLI sets through a flag replaced by that flag
// ("step_seconds" -> "--step"); whole identifiers only, so "intra_op_threads" stays as it is.
std::string with_flag_names(std::string_view message);

}  // namespace parley::cli
