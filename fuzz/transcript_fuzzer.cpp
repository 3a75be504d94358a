// Every transcript reader (fuse --transcript, diarize --transcript): format detection, then each
// parser on the same bytes, so one corpus covers SRT, WebVTT, CTM and both JSON dialects.
#include "fuzz_input.h"
#include "transcript/parsers.h"
#include "transcript/transcript.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace parley::transcript;
  const std::string_view text = parley::fuzz::as_text(data, size);
  parley::fuzz::expect_parse_or_error(
      [&] { (void)parse_transcript(text, detect_transcript_format(text, "fuzz.txt"), "fuzz"); });
  for (auto parse :
       {parse_srt, parse_webvtt, parse_ctm, parse_whisper_cpp_json, parse_openai_json}) {
    parley::fuzz::expect_parse_or_error([&] { (void)parse(text, "fuzz"); });
  }
  return 0;
}
