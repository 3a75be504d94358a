#pragma once
// What every fuzz target shares: the fuzzer's bytes as text or as a file (for parsers that take
// a path), and the rule that a parser may only fail with parley::Error. Any other exception
// (std::out_of_range, nlohmann::json's, std::bad_alloc, filesystem_error) reaches the user as
// "internal error", so it escapes the target and libFuzzer reports it as a finding.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "core/error.h"
#include "core/temporary_directory.h"

namespace parley::fuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// One private folder per fuzzing process, removed when it ends; each input overwrites `name`.
inline std::filesystem::path write_input(const std::uint8_t* data, std::size_t size,
                                         const std::string& name) {
  static const TemporaryDirectory directory("parley-fuzz-");
  const std::filesystem::path path = directory / name;
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

// Runs `parse`; parley::Error is the expected way to refuse an input.
template <typename Parse>
void expect_parse_or_error(Parse&& parse) {
  try {
    parse();
  } catch (const parley::Error&) {
  }
}

}  // namespace parley::fuzz
