// NumPy files: .npy parsing, .npz archives (saved intermediates, PLDA) with every array
// converted as its reader would, and the PLDA loader's validation on the same archive.
#include "cluster/plda.h"
#include "core/npz.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  parley::fuzz::expect_parse_or_error([&] {
    const auto bytes = std::as_bytes(std::span(data, size));
    (void)parley::parse_npy(bytes, "fuzz.npy").as<double>();
  });
  // The same archive stands for both PLDA files, so an input holding all six arrays reaches the
  // PLDA's own checks.
  parley::fuzz::write_input(data, size, "xvec_transform.npz");
  const auto archive_path = parley::fuzz::write_input(data, size, "plda.npz");
  parley::fuzz::expect_parse_or_error([&] {
    for (const auto& [name, array] : parley::read_npz(archive_path)) {
      (void)array.as<float>();
      (void)array.as<std::int64_t>();
    }
  });
  parley::fuzz::expect_parse_or_error(
      [&] { (void)parley::cluster::Plda::load(archive_path.parent_path()); });
  return 0;
}
