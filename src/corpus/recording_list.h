#pragma once
// The recordings a corpus run goes over (`parley diarize`, parley.distributed, the C API's
// parley_output_names and parley_manifest_paths): files listed and manifests, each file once,
// one shard of them (K/N), and an output name for each that no other recording of the list
// shares (corpus/run_record.h writes under those names).
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace parley::corpus {

// Audio paths of a manifest: one per line, or `parley eval`'s TSV manifest (audio<TAB>rttm
// [<TAB>uem]; the first field is the audio). Blank lines and lines starting with '#' are skipped.
// The manifest may be a file, a pipe (`--manifest <(ls *.wav)`) or "-" for standard input;
// relative paths are taken from a file's folder, and from the current folder for a pipe or
// standard input. Fails, naming the manifest, on one that cannot be read, is larger than
// kMaxManifestBytes or names no recording. A line's bytes are kept as they are (a NUL or bytes
// that are not UTF-8 make that recording fail alone, where it is opened).
std::vector<std::filesystem::path> read_recording_manifest(const std::filesystem::path& manifest);
inline constexpr std::size_t kMaxManifestBytes = 64 << 20;

// A path left out by without_repeats: its position in the list and that of its first mention.
struct RepeatedRecording {
  std::size_t repeat = 0;
  std::size_t first = 0;
};

// `audio` with each file once, in order of first mention: a path that names the same absolute
// path as an earlier one (however written: ./a.wav, a.wav, x/../a.wav) is left out and added
// to `repeats` when given.
std::vector<std::filesystem::path> without_repeats(const std::vector<std::filesystem::path>& audio,
                                                   std::vector<RepeatedRecording>* repeats);

// One of N parts of a list, for running a corpus as N independent jobs (a job array): recording
// i belongs to part i mod N, so the parts are disjoint, together hold the whole list, and differ
// in size by at most one.
struct Shard {
  std::size_t index = 0;  // 0-based
  std::size_t count = 1;

  // "K/N" with 1 <= K <= N (K is 1-based, as job-array task ids usually are).
  static Shard parse(const std::string& text);
  bool holds(std::size_t position) const { return position % count == index; }
};

// The longest output name, in bytes: outputs are <name>.<format> and records
// .parley/<name>.<format>.json, written through a temporary ".<file>.partial-<pid>-<n>", and a
// file name holds at most 255 bytes on the common file systems.
inline constexpr std::size_t kMaxOutputNameBytes = 160;

// An output name per recording: the recording id of its file name (eval::recording_uri). Where
// a name would not tell recordings apart (talks/a.wav, music/a.flac), each of those gets '-' and
// 8 hex digits of its absolute path's sha256 (more digits while that still clashes, with another
// such name or with a file called so: x-300c75a1.wav). A name longer than kMaxOutputNameBytes is
// cut, at a UTF-8 character's end, and takes the digits too. Names depend on the whole list
// only, so every shard of one list names a recording alike. Each path must be listed once
// (without_repeats); fails otherwise.
std::vector<std::string> unique_output_names(const std::vector<std::filesystem::path>& audio);

// The output name of one recording whose caller may choose it (a library batch, which never sees
// its whole list): `chosen` when it is given, else the name unique_output_names gives `audio`
// alone. Fails, saying what a name must be, on a chosen name that is no file name of at most
// kMaxOutputNameBytes bytes ("", ".", "..", one with '/').
std::string chosen_output_name(const std::optional<std::string>& chosen,
                               const std::filesystem::path& audio);

}  // namespace parley::corpus
