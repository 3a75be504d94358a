// From a --manifest to the files a corpus run writes: the manifest's lines (NUL bytes, bytes
// that are not UTF-8, very long names, names that look like another's hashed name, the same file
// spelled twice) through without_repeats and unique_output_names. Beyond refusing with
// parley::Error, the names must be usable as written: all different, none empty, no '/' or NUL,
// at most kMaxOutputNameBytes, and the same whatever the order of the list (every shard of a
// job array names a recording alike).
#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>

#include "core/text.h"
#include "corpus/recording_list.h"
#include "fuzz_input.h"

namespace {

void require(bool condition) {
  if (!condition) std::abort();  // a finding: libFuzzer keeps the input
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto manifest = parley::fuzz::write_input(data, size, "manifest.txt");
  parley::fuzz::expect_parse_or_error([&] {
    const auto listed = parley::corpus::read_recording_manifest(manifest);
    const auto recordings = parley::corpus::without_repeats(listed, nullptr);
    const auto names = parley::corpus::unique_output_names(recordings);
    require(names.size() == recordings.size());
    const std::set<std::string> distinct(names.begin(), names.end());
    require(distinct.size() == names.size());
    std::map<std::string, std::string> name_of;
    for (std::size_t i = 0; i < names.size(); ++i) {
      const std::string& name = names[i];
      require(!name.empty() && name.size() <= parley::corpus::kMaxOutputNameBytes);
      require(name.find('\0') == std::string::npos && name.find('/') == std::string::npos);
      require(parley::is_valid_utf8(parley::utf8_or_escaped(name)));
      name_of[recordings[i].native()] = name;
    }
    std::vector<std::filesystem::path> reversed(recordings.rbegin(), recordings.rend());
    const auto reversed_names = parley::corpus::unique_output_names(reversed);
    for (std::size_t i = 0; i < reversed.size(); ++i) {
      require(name_of[reversed[i].native()] == reversed_names[i]);
    }
  });
  return 0;
}
