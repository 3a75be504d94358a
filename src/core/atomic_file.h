#pragma once
// Output files appear whole or not at all: the bytes go to a temporary file in the same folder,
// are flushed to the disk, and the temporary file is renamed over the destination. A failure
// (full disk, read-only folder, missing folder) leaves the old file as it was and no partial file.
#include <filesystem>
#include <string_view>

namespace parley {

// Replaces `path` with `bytes`. Throws parley::Error naming `path` when anything fails.
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes);

}  // namespace parley
