#include "audio/decoded_audio.h"

#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "audio/mono_resampled_stream.h"
#include "core/error.h"
#include "core/sample_rate.h"
#include "core/stage_timer.h"
#include "core/temporary_directory.h"

namespace parley::audio {
namespace {

// An unlinked temporary file: gone from the file system at once, freed when the last
// descriptor or mapping of it goes.
class AnonymousFile {
 public:
  AnonymousFile() : folder_(temporary_folder()) {
    std::string pattern = (folder_ / "parley-samples-XXXXXX").string();
    descriptor_ = ::mkstemp(pattern.data());
    if (descriptor_ < 0) {
      fail(
          "cannot create a temporary file for a long recording in {}: {} (set TMPDIR to a "
          "folder with room for 230 MB per hour of audio)",
          folder_.string(), std::strerror(errno));
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
            folder_.string(), std::strerror(errno));
      }
      bytes += written;
      left -= static_cast<std::size_t>(written);
    }
  }
  // Reserves `samples` samples of room, so that the file can be mapped whole before the samples
  // arrive (a sparse file: no disk is taken until they are written).
  void set_length(std::size_t samples) {
    const auto bytes = static_cast<off_t>(samples * sizeof(float));
    if (::ftruncate(descriptor_, bytes) != 0) {
      fail(
          "cannot make room for a long recording's samples in a temporary file in {}: {} (set "
          "TMPDIR to a folder with room for 230 MB per hour of audio)",
          folder_.string(), std::strerror(errno));
    }
  }
  int descriptor() const { return descriptor_; }

 private:
  std::filesystem::path folder_;
  int descriptor_ = -1;
};

// Samples decoded and written to the file at a time: 256 KB, small enough to stay in the cache
// between the decoder writing it and the kernel copying it.
constexpr std::size_t kWriteBlock = 1 << 16;

// The header's exact length when it is believed: up to an hour, as when reserving memory (a
// damaged FLAC header claimed 550 billion samples). The samples are then decoded straight into
// a destination of that length, which the pipeline may start reading before it is full.
std::optional<std::size_t> believed_length(const MonoResampledStream& stream) {
  constexpr std::int64_t kMostSamplesBelieved = std::int64_t{3600} * kSampleRate;
  const auto expected = stream.expected_samples();
  if (!expected || *expected < 0 || *expected > kMostSamplesBelieved) return std::nullopt;
  return static_cast<std::size_t>(*expected);
}

void* map_samples(int descriptor, std::size_t samples, int flags,
                  const std::filesystem::path& path) {
  void* mapping = ::mmap(nullptr, samples * sizeof(float), PROT_READ, flags, descriptor, 0);
  if (mapping == MAP_FAILED) {
    fail("{}: cannot map its decoded samples ({})", path.string(), std::strerror(errno));
  }
  return mapping;
}

}  // namespace

// The decode of a recording of known length into its destination (memory, or the file that
// the mapping shows), on a thread of its own or on the caller's; waiters learn how far it got.
struct DecodedAudio::Background {
  std::mutex mutex;
  std::condition_variable advanced;
  std::size_t decoded = 0;  // samples [0, decoded) hold their values
  bool finished = false;
  bool as_announced = true;
  std::exception_ptr error;
  double seconds = 0.0;
  std::atomic<bool> stop{false};
  std::jthread thread;  // last: joined before the rest goes

  void publish(std::size_t total) {
    {
      const std::lock_guard lock(mutex);
      decoded = total;
    }
    advanced.notify_all();
  }

  // Reads `stream` into `memory` (or, with `file`, to the file) until `length` samples, and
  // checks that the stream ends there.
  void run(MonoResampledStream& stream, std::span<float> memory, AnonymousFile* file,
           std::size_t length) {
    const auto start = std::chrono::steady_clock::now();
    bool matches = true;
    try {
      std::vector<float> block(file != nullptr ? kWriteBlock : 0);
      std::size_t total = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        const std::size_t wanted = std::min(kWriteBlock, length - total);
        if (wanted == 0) {
          // The header's length is reached: the stream must end here.
          float extra = 0.0f;
          matches = stream.read(std::span<float>(&extra, 1)) == 0;
          break;
        }
        const std::span<float> target =
            file != nullptr ? std::span<float>(block).first(wanted) : memory.subspan(total, wanted);
        const std::size_t got = stream.read(target);
        if (file != nullptr) file->write(target.first(got));
        total += got;
        publish(total);
        if (got < wanted) {
          // Short of the header's length: what readers may still take for samples is silence
          // (the file's unwritten part already reads as zeros), and they are to decode again.
          if (file == nullptr)
            std::fill(memory.begin() + static_cast<std::ptrdiff_t>(total), memory.end(), 0.0f);
          matches = false;
          break;
        }
      }
    } catch (...) {
      const std::lock_guard lock(mutex);
      error = std::current_exception();
    }
    {
      const std::lock_guard lock(mutex);
      finished = true;
      as_announced = matches;
      seconds = seconds_since(start);
    }
    advanced.notify_all();
  }

  void wait_for(std::size_t end) {
    std::unique_lock lock(mutex);
    advanced.wait(lock, [&] { return decoded >= end || finished; });
    if (error) std::rethrow_exception(error);
  }
};

DecodedAudio DecodedAudio::start(std::unique_ptr<MonoResampledStream> stream,
                                 const std::filesystem::path& path, std::size_t length,
                                 std::size_t spill_samples, bool on_own_thread) {
  DecodedAudio audio;
  audio.background_ = std::make_unique<Background>();
  std::span<float> memory;
  std::unique_ptr<AnonymousFile> file;
  if (spill_samples > 0 && length > spill_samples) {
    file = std::make_unique<AnonymousFile>();
    file->set_length(length);
    // Shared: the samples written to the file after mapping it show through the mapping.
    audio.mapping_bytes_ = length * sizeof(float);
    audio.mapping_ = map_samples(file->descriptor(), length, MAP_SHARED, path);
    audio.samples_ = std::span<const float>(static_cast<const float*>(audio.mapping_), length);
  } else {
    // Not zeroed: the decoder writes every sample before anyone may read it.
    std::shared_ptr<float[]> owned = std::make_unique_for_overwrite<float[]>(length);
    memory = std::span<float>(owned.get(), length);
    audio.samples_ = memory;
    audio.memory_ = std::move(owned);
  }
  Background& background = *audio.background_;
  auto decode = [&background, memory, length](std::unique_ptr<MonoResampledStream> source,
                                              std::unique_ptr<AnonymousFile> target) {
    background.run(*source, memory, target.get(), length);
  };
  if (on_own_thread) {
    background.thread = std::jthread(decode, std::move(stream), std::move(file));
  } else {
    decode(std::move(stream), std::move(file));
  }
  return audio;
}

DecodedAudio DecodedAudio::decode(const std::filesystem::path& path, std::size_t spill_samples) {
  const auto start_time = std::chrono::steady_clock::now();
  auto stream = std::make_unique<MonoResampledStream>(path, kSampleRate);
  if (const auto length = believed_length(*stream)) {
    // The samples go straight to a destination of the header's length; should the stream end
    // elsewhere, it is read again as it comes.
    DecodedAudio audio = start(std::move(stream), path, *length, spill_samples, false);
    audio.wait();
    if (audio.as_announced()) return audio;
    stream = std::make_unique<MonoResampledStream>(path, kSampleRate);
  }
  const std::size_t limit =
      spill_samples > 0 ? spill_samples : std::numeric_limits<std::size_t>::max();
  std::vector<float> samples;
  // A header that states a length past the limit (but too long to believe) sends the samples to
  // the file from the start, so that none are first gathered in memory and then copied.
  const auto expected = stream->expected_samples();
  if (!expected || *expected <= 0 || static_cast<std::size_t>(*expected) <= limit) {
    samples.reserve(std::min(samples_to_reserve(*stream), limit));
    if (read_into(*stream, samples, limit)) {
      shrink_if_grown(samples);
      DecodedAudio audio(std::make_shared<const std::vector<float>>(std::move(samples)));
      audio.decode_seconds_ = seconds_since(start_time);
      return audio;
    }
  }
  AnonymousFile file;
  file.write(samples);
  std::size_t total = samples.size();
  samples = {};
  std::vector<float> block(kWriteBlock);
  while (true) {
    const std::size_t got = stream->read(block);
    file.write(std::span<const float>(block.data(), got));
    total += got;
    if (got < block.size()) break;
  }
  DecodedAudio decoded;
  decoded.mapping_bytes_ = total * sizeof(float);
  decoded.mapping_ = map_samples(file.descriptor(), total, MAP_PRIVATE, path);
  decoded.samples_ = std::span<const float>(static_cast<const float*>(decoded.mapping_), total);
  decoded.decode_seconds_ = seconds_since(start_time);
  return decoded;
}

DecodedAudio DecodedAudio::decode_in_background(const std::filesystem::path& path,
                                                std::size_t spill_samples) {
  auto stream = std::make_unique<MonoResampledStream>(path, kSampleRate);
  const auto length = believed_length(*stream);
  if (!length) return decode(path, spill_samples);
  return start(std::move(stream), path, *length, spill_samples, true);
}

DecodedAudio::DecodedAudio() = default;

DecodedAudio::DecodedAudio(std::shared_ptr<const std::vector<float>> samples) {
  if (samples) samples_ = std::span<const float>(*samples);
  memory_ = std::move(samples);
}

DecodedAudio::DecodedAudio(DecodedAudio&& other) noexcept { *this = std::move(other); }

DecodedAudio& DecodedAudio::operator=(DecodedAudio&& other) noexcept {
  if (this != &other) {
    stop_and_unmap();
    background_ = std::move(other.background_);
    memory_ = std::move(other.memory_);
    mapping_ = std::exchange(other.mapping_, nullptr);
    mapping_bytes_ = std::exchange(other.mapping_bytes_, 0);
    samples_ = std::exchange(other.samples_, {});
    decode_seconds_ = std::exchange(other.decode_seconds_, 0.0);
  }
  return *this;
}

DecodedAudio::~DecodedAudio() { stop_and_unmap(); }

void DecodedAudio::stop_and_unmap() {
  if (background_) {
    background_->stop = true;
    background_.reset();  // joins the decoding thread
  }
  if (mapping_ != nullptr) ::munmap(mapping_, mapping_bytes_);
  mapping_ = nullptr;
}

void DecodedAudio::wait_for(std::size_t end) const {
  if (background_) background_->wait_for(end);
}

void DecodedAudio::wait() const { wait_for(std::numeric_limits<std::size_t>::max()); }

bool DecodedAudio::as_announced() const {
  if (!background_) return true;
  const std::lock_guard lock(background_->mutex);
  return background_->as_announced;
}

double DecodedAudio::decode_seconds() const {
  if (!background_) return decode_seconds_;
  const std::lock_guard lock(background_->mutex);
  return background_->seconds;
}

void DecodedAudio::release_before(std::size_t sample) const {
  if (mapping_ == nullptr) return;
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t bytes = std::min(sample, samples_.size()) * sizeof(float) / page * page;
  if (bytes > 0) ::madvise(mapping_, bytes, MADV_DONTNEED);
}

}  // namespace parley::audio
