// UEM files (score --uem, eval): the scored regions.
#include <sstream>

#include "eval/uem.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  parley::fuzz::expect_parse_or_error([&] {
    const auto uem = parley::eval::parse_uem(parley::fuzz::as_text(data, size), "fuzz.uem");
    std::ostringstream out;
    parley::eval::write_uem(out, uem);
  });
  return 0;
}
