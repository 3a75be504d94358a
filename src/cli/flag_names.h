#pragma once
// The library names options and configuration fields in its messages ("threads: must be at least
// 0", "step_seconds must be in (0, 10]"); the command line speaks in flags. This is the one place
// that maps the first to the second.
#include <string>
#include <string_view>

namespace parley::cli {

// `message` with every option of the table that the CLI offers (and every configuration field
// such an option sets) replaced by its flag: "cuda_graph: ..." -> "--cuda-graph: ...",
// "step_seconds" -> "--step". Whole identifiers only, so "intra_op_threads" stays as it is. A name
// with an underscore is replaced wherever it stands; a plain word ("threads", "provider") only
// where it names the option: at the start of the message or of a clause (after "; " or "("),
// followed by ':' or a space, or after "contradicts " or "use " (the engine's wording for an
// option that clashes with another), since such words also appear in ordinary prose.
std::string with_flag_names(std::string_view message);

}  // namespace parley::cli
