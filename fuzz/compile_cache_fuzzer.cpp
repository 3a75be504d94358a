// The compiled-graph cache's entry manifest (what `cache list/verify/prune` and every lookup
// read back from disk), with a small artifact beside it to size and hash.
#include "fuzz_input.h"
#include "runtime/compile_cache.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::uint8_t kArtifact[] = {'o', 'n', 'n', 'x'};
  const auto manifest = parley::fuzz::write_input(data, size, "manifest.json");
  const auto entry = manifest.parent_path();
  std::filesystem::create_directories(entry / "artifacts");
  std::ofstream(entry / "artifacts" / "model.bin", std::ios::binary)
      .write(reinterpret_cast<const char*>(kArtifact), sizeof kArtifact);
  for (const auto verification :
       {parley::runtime::Verification::kSizes, parley::runtime::Verification::kHashes}) {
    parley::fuzz::expect_parse_or_error(
        [&] { (void)parley::runtime::inspect_entry(entry, verification); });
  }
  return 0;
}
