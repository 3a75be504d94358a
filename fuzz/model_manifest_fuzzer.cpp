// The model manifest (models/manifest.json, `--models DIR` copies, `models verify`).
#include "fuzz_input.h"
#include "models/registry.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  parley::fuzz::expect_parse_or_error([&] {
    const auto registry = parley::models::Registry::parse(
        std::string(parley::fuzz::as_text(data, size)), "fuzz/manifest.json");
    (void)registry.describe();
    for (const auto role : parley::models::all_roles()) (void)registry.for_role(role);
  });
  return 0;
}
