#include "graph/content_addressed_model.h"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <system_error>

#include "core/error.h"
#include "core/sha256.h"

namespace parley::graph {

ContentAddressedModel write_content_addressed_model(const std::string& bytes,
                                                    const std::string& stem,
                                                    const std::filesystem::path& directory) {
  ContentAddressedModel file;
  file.sha256 = sha256_text(bytes);
  file.path = directory / fmt::format("{}-{}.onnx", stem, file.sha256.substr(0, 16));
  std::error_code ec;
  if (std::filesystem::file_size(file.path, ec) == bytes.size() && !ec) return file;
  std::filesystem::create_directories(directory, ec);
  // Unique per process and per call: threads of one process must not share a staging file.
  static std::atomic<unsigned> next_staging{0};
  const auto staging = std::filesystem::path(
      file.path.string() + fmt::format(".tmp-{}-{}", ::getpid(), next_staging.fetch_add(1)));
  {
    std::ofstream out(staging, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      std::filesystem::remove(staging, ec);
      fail("cannot write the model {} (check that {} is writable and has free space)",
           staging.string(), directory.string());
    }
  }
  std::filesystem::rename(staging, file.path, ec);
  if (ec) {
    const std::string reason = ec.message();
    std::filesystem::remove(staging, ec);
    fail("cannot move the model into place at {}: {} (check that {} is writable)",
         file.path.string(), reason, directory.string());
  }
  return file;
}

}  // namespace parley::graph
