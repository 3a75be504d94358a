#include "audio/decoded_audio.h"

#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "audio/mono_resampled_stream.h"
#include "core/error.h"
#include "core/sample_rate.h"

namespace parley::audio {
namespace {

// An unlinked temporary file: gone from the file system at once, freed when the last
// descriptor or mapping of it goes.
class AnonymousFile {
 public:
  AnonymousFile() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "parley-samples-XXXXXX").string();
    descriptor_ = ::mkstemp(pattern.data());
    if (descriptor_ < 0) {
      fail(
          "cannot create a temporary file for a long recording in {}: {} (set TMPDIR to a "
          "folder with room for 230 MB per hour of audio)",
          std::filesystem::temp_directory_path().string(), std::strerror(errno));
    }
    ::unlink(pattern.c_str());
  }
  ~AnonymousFile() { ::close(descriptor_); }
  AnonymousFile(const AnonymousFile&) = delete;
  AnonymousFile& operator=(const AnonymousFile&) = delete;

  void write(std::span<const float> samples) {
    const char* bytes = reinterpret_cast<const char*>(samples.data());
    std::size_t left = samples.size_bytes();
    while (left > 0) {
      const ssize_t written = ::write(descriptor_, bytes, left);
      if (written < 0 && errno == EINTR) continue;
      if (written <= 0) {
        fail(
            "cannot write a long recording's samples to a temporary file in {}: {} (set "
            "TMPDIR to a folder with room for 230 MB per hour of audio)",
            std::filesystem::temp_directory_path().string(), std::strerror(errno));
      }
      bytes += written;
      left -= static_cast<std::size_t>(written);
    }
  }
  int descriptor() const { return descriptor_; }

 private:
  int descriptor_ = -1;
};

// Samples decoded and written to the file at a time: 256 KB, which stays in the cache between
// the decoder writing it and the kernel copying it.
constexpr std::size_t kWriteBlock = 1 << 16;

}  // namespace

DecodedAudio DecodedAudio::decode(const std::filesystem::path& path, std::size_t spill_samples) {
  MonoResampledStream stream(path, kSampleRate);
  const std::size_t limit =
      spill_samples > 0 ? spill_samples : std::numeric_limits<std::size_t>::max();
  std::vector<float> samples;
  // A header that states a length past the limit sends the samples to the file from the start,
  // so that none are first gathered in memory and then copied.
  const auto expected = stream.expected_samples();
  if (!expected || static_cast<std::size_t>(std::max<std::int64_t>(*expected, 0)) <= limit) {
    samples.reserve(std::min(samples_to_reserve(stream), limit));
    if (read_into(stream, samples, limit)) {
      shrink_if_grown(samples);
      return DecodedAudio(std::make_shared<const std::vector<float>>(std::move(samples)));
    }
  }
  AnonymousFile file;
  file.write(samples);
  std::size_t total = samples.size();
  samples = {};
  std::vector<float> block(kWriteBlock);
  while (true) {
    const std::size_t got = stream.read(block);
    file.write(std::span<const float>(block.data(), got));
    total += got;
    if (got < block.size()) break;
  }
  DecodedAudio decoded;
  decoded.mapping_bytes_ = total * sizeof(float);
  void* mapping =
      ::mmap(nullptr, decoded.mapping_bytes_, PROT_READ, MAP_PRIVATE, file.descriptor(), 0);
  if (mapping == MAP_FAILED) {
    fail("{}: cannot map its decoded samples ({})", path.string(), std::strerror(errno));
  }
  decoded.mapping_ = mapping;
  decoded.samples_ = std::span<const float>(static_cast<const float*>(mapping), total);
  return decoded;
}

DecodedAudio::DecodedAudio(std::shared_ptr<const std::vector<float>> samples)
    : memory_(std::move(samples)) {
  if (memory_) samples_ = std::span<const float>(*memory_);
}

DecodedAudio::DecodedAudio(DecodedAudio&& other) noexcept { *this = std::move(other); }

DecodedAudio& DecodedAudio::operator=(DecodedAudio&& other) noexcept {
  if (this != &other) {
    unmap();
    memory_ = std::move(other.memory_);
    mapping_ = std::exchange(other.mapping_, nullptr);
    mapping_bytes_ = std::exchange(other.mapping_bytes_, 0);
    samples_ = std::exchange(other.samples_, {});
  }
  return *this;
}

DecodedAudio::~DecodedAudio() { unmap(); }

void DecodedAudio::unmap() {
  if (mapping_ != nullptr) ::munmap(mapping_, mapping_bytes_);
  mapping_ = nullptr;
}

void DecodedAudio::release_before(std::size_t sample) const {
  if (mapping_ == nullptr) return;
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t bytes = std::min(sample, samples_.size()) * sizeof(float) / page * page;
  if (bytes > 0) ::madvise(mapping_, bytes, MADV_DONTNEED);
}

}  // namespace parley::audio
