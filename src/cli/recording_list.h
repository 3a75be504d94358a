#pragma once
// The recordings a corpus run of `parley diarize` goes over: the command line's files and
// --manifest files, one shard of them (--shard K/N), and an output name for each that no other
// recording of the list shares.
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace parley::cli {

// Audio paths of a manifest: one per line, or `parley eval`'s TSV manifest (audio<TAB>rttm
// [<TAB>uem]; the first field is the audio). Blank lines and lines starting with '#' are skipped;
// relative paths are taken from the manifest's folder. Fails, naming the file and line, on a
// manifest that is not a regular file, is larger than kMaxManifestBytes or names no recording.
std::vector<std::filesystem::path> read_recording_manifest(const std::filesystem::path& manifest);
inline constexpr std::size_t kMaxManifestBytes = 64 << 20;

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

// An output name per recording: the recording id of its file name (eval::recording_uri), and
// where two recordings of the list share it (talks/a.wav, music/a.flac), that id followed by '-'
// and 8 hex digits of its absolute path's sha256. Names depend on the whole list only, so every
// shard of one list names a recording alike.
std::vector<std::string> unique_output_names(const std::vector<std::filesystem::path>& audio);

}  // namespace parley::cli
