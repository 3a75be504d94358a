#pragma once
// How parley writes an output file (docs/reliability.md, "How outputs are written"):
//   - A regular file, or a name where nothing is yet, appears whole or not at all: the bytes go
//     to a temporary file in the same folder, are flushed to the disk, and the temporary file is
//     renamed over the destination. A failure (full disk, read-only folder, missing folder)
//     leaves the old file as it was and no partial file. A replaced file keeps its mode, and its
//     owner and group where this user may give them.
//   - A regular file without write permission (for this user) is refused unless
//     overwrite_read_only is set; the mode bits are checked, so that this holds for root too.
//   - A symbolic link is followed: the file it names is written (or created) and the link stays.
//   - Anything else (a character device such as /dev/null, a FIFO, a terminal) is written in
//     place, as a shell's `>` would: never replaced. /dev/stdout, /dev/stderr, /dev/fd/N and
//     /proc/self/fd/N are written through the process's own descriptor N.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace parley {

struct OutputOptions {
  // Replace a regular file that has no write permission (mode 0444, or another user's file).
  bool overwrite_read_only = false;
};

// Why `path` cannot be written as write_file_atomically() would write it (the folder is missing
// or not writable, `path` is a folder or a socket, a read-only file without overwrite_read_only,
// ...), in words that follow the path ("the folder /x does not exist"); nothing when it can be.
// Opens nothing: a FIFO's writer is not woken.
std::optional<std::string> output_problem(const std::filesystem::path& path,
                                          const OutputOptions& options = {});

// Fails naming `path` when output_problem() finds a problem.
void check_output_destination(const std::filesystem::path& path, const OutputOptions& options = {});

// Writes `bytes` to `path` as the header describes. Throws parley::Error naming `path` when
// anything fails.
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes,
                           const OutputOptions& options = {});

// Writes `bytes` to a file that did not exist before, never replacing anything (nor writing
// through a link): `wanted`, or when a file is there <stem>-2<ext>, <stem>-3<ext>, ... in the
// same folder. The file appears whole. Returns the path it was written to.
std::filesystem::path write_new_file(const std::filesystem::path& wanted, std::string_view bytes);

}  // namespace parley
