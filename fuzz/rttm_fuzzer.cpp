// RTTM reference and hypothesis files (score, eval, fuse), then what scoring does with the turns.
#include "eval/rttm.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  parley::fuzz::expect_parse_or_error([&] {
    const auto turns = parley::eval::parse_rttm(parley::fuzz::as_text(data, size), "fuzz.rttm");
    (void)parley::eval::group_by_file(turns);
    (void)parley::eval::format_rttm(turns);
  });
  return 0;
}
