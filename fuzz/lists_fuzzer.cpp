// Lists of recordings: pyannote URI lists, eval's TSV manifests (with the RTTM and UEM files they
// name: the input itself) and diarize --manifest.
#include "corpus/recording_list.h"
#include "eval/eval_set.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto list = parley::fuzz::write_input(data, size, "list.txt");
  parley::fuzz::expect_parse_or_error([&] { (void)parley::eval::read_uri_list(list); });
  parley::fuzz::expect_parse_or_error([&] { (void)parley::eval::eval_files_from_manifest(list); });
  parley::fuzz::expect_parse_or_error([&] {
    const auto recordings = parley::corpus::read_recording_manifest(list);
    (void)parley::corpus::unique_output_names(recordings);
  });
  return 0;
}
