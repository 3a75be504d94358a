#include "audio/sndfile_source.h"

#include <fcntl.h>
#include <sndfile.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>

#include "audio/error_text.h"
#include "core/error.h"

namespace parley::audio {
namespace {

// Closes the descriptor libsndfile reads through; parley keeps it so that progress can be
// measured in bytes (lseek on it) and so that it is closed exactly once.
class FileDescriptor {
 public:
  explicit FileDescriptor(int descriptor) : descriptor_(descriptor) {}
  ~FileDescriptor() {
    if (descriptor_ >= 0) ::close(descriptor_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return descriptor_; }

 private:
  int descriptor_;
};

struct SndfileCloser {
  void operator()(SNDFILE* file) const { sf_close(file); }
};

std::string format_name(int format) {
  SF_FORMAT_INFO format_info{};
  format_info.format = format;
  if (sf_command(nullptr, SFC_GET_FORMAT_INFO, &format_info, sizeof(format_info)) != 0 ||
      format_info.name == nullptr) {
    return fmt::format("libsndfile format 0x{:x}", format);
  }
  return format_info.name;
}

// Formats whose header states the exact number of frames, so a shortfall means a damaged file:
// uncompressed or companded samples in a container that records their count, and FLAC.
bool header_counts_frames_exactly(int format) {
  switch (format & SF_FORMAT_SUBMASK) {
    case SF_FORMAT_PCM_S8:
    case SF_FORMAT_PCM_U8:
    case SF_FORMAT_PCM_16:
    case SF_FORMAT_PCM_24:
    case SF_FORMAT_PCM_32:
    case SF_FORMAT_FLOAT:
    case SF_FORMAT_DOUBLE:
    case SF_FORMAT_ULAW:
    case SF_FORMAT_ALAW:
      break;
    default:
      return false;  // block codecs (ADPCM, GSM, ...) may pad their last block
  }
  switch (format & SF_FORMAT_TYPEMASK) {
    case SF_FORMAT_WAV:
    case SF_FORMAT_WAVEX:
    case SF_FORMAT_RF64:
    case SF_FORMAT_W64:
    case SF_FORMAT_AIFF:
    case SF_FORMAT_AU:
    case SF_FORMAT_CAF:
    case SF_FORMAT_FLAC:
      return true;
    default:
      return false;
  }
}

class SndfileSource final : public AudioSource {
 public:
  SndfileSource(std::filesystem::path path, std::unique_ptr<FileDescriptor> descriptor,
                std::unique_ptr<SNDFILE, SndfileCloser> file, const SF_INFO& sf_info,
                std::int64_t file_bytes)
      : path_(std::move(path)),
        descriptor_(std::move(descriptor)),
        file_(std::move(file)),
        file_bytes_(file_bytes) {
    info_.sample_rate = sf_info.samplerate;
    info_.channels = sf_info.channels;
    // libsndfile reports SF_COUNT_MAX when it cannot know the length (e.g. a streamed header).
    if (sf_info.frames >= 0 && sf_info.frames < std::numeric_limits<sf_count_t>::max() / 2) {
      info_.frames = sf_info.frames;
      info_.frames_exact = header_counts_frames_exactly(sf_info.format);
    }
    info_.container = format_name(sf_info.format & SF_FORMAT_TYPEMASK);
    info_.codec = format_name(sf_info.format & SF_FORMAT_SUBMASK);
    info_.backend = "libsndfile";
  }

  const AudioInfo& info() const override { return info_; }

  std::size_t read(std::span<float> interleaved) override {
    const auto channels = static_cast<std::size_t>(info_.channels);
    const auto wanted = static_cast<sf_count_t>(interleaved.size() / channels);
    if (wanted == 0 || finished_) return 0;
    const sf_count_t got = sf_readf_float(file_.get(), interleaved.data(), wanted);
    if (got < 0 || sf_error(file_.get()) != SF_ERR_NO_ERROR) {
      fail("{}: cannot decode the audio after frame {}: {} (libsndfile); the file is damaged",
           path_.string(), frames_decoded_, as_clause(sf_strerror(file_.get())));
    }
    frames_decoded_ += got;
    // Only an empty read marks the end: some codecs may return short blocks mid-stream.
    if (got == 0) {
      finished_ = true;
      if (info_.frames_exact && info_.frames && frames_decoded_ < *info_.frames) {
        fail(
            "{}: truncated: the header declares {} frames but only {} could be decoded; the file "
            "was cut short",
            path_.string(), *info_.frames, frames_decoded_);
      }
      warn_if_cut_short(path_, info_, frames_decoded_);
    }
    return static_cast<std::size_t>(got);
  }

  DecodeProgress progress() const override {
    DecodeProgress progress;
    progress.frames_decoded = frames_decoded_;
    progress.frames_total = info_.frames;
    const off_t position = ::lseek(descriptor_->get(), 0, SEEK_CUR);
    progress.bytes_consumed = position < 0 ? 0 : static_cast<std::int64_t>(position);
    progress.bytes_total = file_bytes_;
    return progress;
  }

 private:
  std::filesystem::path path_;
  // Declared before file_ so that libsndfile closes first and the descriptor after it.
  std::unique_ptr<FileDescriptor> descriptor_;
  std::unique_ptr<SNDFILE, SndfileCloser> file_;
  std::int64_t file_bytes_;
  AudioInfo info_;
  std::int64_t frames_decoded_ = 0;
  bool finished_ = false;
};

}  // namespace

std::unique_ptr<AudioSource> open_sndfile_source(const std::filesystem::path& path,
                                                 std::string& why_not) {
  auto descriptor = std::make_unique<FileDescriptor>(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (descriptor->get() < 0) {
    fail("{}: cannot open: {}; check the path and its permissions", path.string(),
         std::strerror(errno));
  }
  const off_t file_bytes = ::lseek(descriptor->get(), 0, SEEK_END);
  ::lseek(descriptor->get(), 0, SEEK_SET);

  SF_INFO sf_info{};
  std::unique_ptr<SNDFILE, SndfileCloser> file(
      sf_open_fd(descriptor->get(), SFM_READ, &sf_info, SF_FALSE));
  if (!file) {
    why_not = sf_strerror(nullptr);
    return nullptr;
  }
  if (sf_info.channels <= 0) {
    fail("{}: the {} header declares {} channels; the file is damaged", path.string(),
         format_name(sf_info.format & SF_FORMAT_TYPEMASK), sf_info.channels);
  }
  if (sf_info.samplerate <= 0) {
    fail("{}: the {} header declares a sample rate of {} Hz; the file is damaged", path.string(),
         format_name(sf_info.format & SF_FORMAT_TYPEMASK), sf_info.samplerate);
  }
  // libsndfile finds an Ogg stream's length from its last page; without one it reads nothing.
  if ((sf_info.format & SF_FORMAT_TYPEMASK) == SF_FORMAT_OGG &&
      sf_info.frames >= std::numeric_limits<sf_count_t>::max() / 2) {
    fail("{}: truncated: the Ogg stream has no final page; the file was cut short or is damaged",
         path.string());
  }
  return std::make_unique<SndfileSource>(path, std::move(descriptor), std::move(file), sf_info,
                                         static_cast<std::int64_t>(file_bytes));
}

}  // namespace parley::audio
