#include "audio/audio_source.h"

#include <algorithm>
#include <array>
#include <fstream>
#include <system_error>
#include <utility>

#include "audio/error_text.h"
#include "audio/header_check.h"
#include "audio/libav_source.h"
#include "audio/sndfile_source.h"
#include "core/error.h"
#include "core/text.h"

#include <spdlog/spdlog.h>

namespace parley::audio {

std::optional<double> DecodeProgress::fraction() const {
  if (frames_total && *frames_total > 0) {
    return std::clamp(static_cast<double>(frames_decoded) / static_cast<double>(*frames_total), 0.0,
                      1.0);
  }
  if (bytes_total && *bytes_total > 0) {
    return std::clamp(static_cast<double>(bytes_consumed) / static_cast<double>(*bytes_total), 0.0,
                      1.0);
  }
  return std::nullopt;
}

namespace {

// Refuses what no decoder should be handed: paths with a NUL byte, missing paths, folders,
// devices, FIFOs (which would block), and empty files.
void check_is_nonempty_regular_file(const std::filesystem::path& path) {
  check_path_has_no_nul(path);
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  if (error || !std::filesystem::exists(status)) {
    if (error && error != std::errc::no_such_file_or_directory) {
      fail("{}: cannot read: {}; check the path and its permissions", path.string(),
           error.message());
    }
    fail("{}: no such file; check the path", path.string());
  }
  if (std::filesystem::is_directory(status)) {
    fail("{}: is a directory, not an audio file; give the path of a recording", path.string());
  }
  if (!std::filesystem::is_regular_file(status)) {
    fail("{}: is not a regular file (a device, FIFO or socket); give the path of a recording",
         path.string());
  }
  const auto bytes = std::filesystem::file_size(path, error);
  if (error) {
    fail("{}: cannot read: {}; check the path and its permissions", path.string(), error.message());
  }
  if (bytes == 0) {
    // /proc and /sys files report a size of 0 and still have content.
    if (std::ifstream(path, std::ios::binary).peek() != std::char_traits<char>::eof()) {
      fail(
          "{}: reports a size of 0 bytes but has content (a /proc or /sys file?); it is not a "
          "recording",
          path.string());
    }
    fail("{}: the file is empty (0 bytes); it holds no audio", path.string());
  }
}

constexpr int kMaxChannels = 1024;

std::unique_ptr<AudioSource> checked(std::unique_ptr<AudioSource> source,
                                     const std::filesystem::path& path) {
  const AudioInfo& info = source->info();
  if (info.sample_rate < kMinSampleRate || info.sample_rate > kMaxSampleRate) {
    fail(
        "{}: the {} header declares a sample rate of {} Hz, outside the {}-{} Hz that parley "
        "reads; the file is damaged or not a recording",
        path.string(), info.container, info.sample_rate, kMinSampleRate, kMaxSampleRate);
  }
  if (info.channels > kMaxChannels) {
    fail(
        "{}: the {} header declares {} channels, more than the {} that parley reads; the file is "
        "damaged",
        path.string(), info.container, info.channels, kMaxChannels);
  }
  return source;
}

// libsndfile's reason in parley's words. For a file it does not recognise, libsndfile 1.2 may say
// "File does not exist or is not a regular file (possibly a pipe?)", which is false here: the
// file was checked to exist and to be a regular file.
std::string sndfile_clause(const std::string& reason) {
  if (reason.find("does not exist or is not a regular file") != std::string::npos) {
    return "format not recognised";
  }
  return as_clause(reason);
}

// What a file's first bytes say of MPEG audio: an ID3v2 tag (which MP3 files carry in front),
// or an MPEG audio frame's sync word.
enum class MpegLook { kNone, kId3Tag, kFrameSync };

MpegLook mpeg_look(const std::filesystem::path& path) {
  std::array<unsigned char, 3> start{};
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(start.data()), start.size());
  if (in.gcount() < 2) return MpegLook::kNone;
  if (in.gcount() == 3 && start[0] == 'I' && start[1] == 'D' && start[2] == '3') {
    return MpegLook::kId3Tag;
  }
  // 11 set bits, then a layer other than the reserved 00 (AAC's ADTS header has layer 00).
  if (start[0] == 0xFF && (start[1] & 0xE0) == 0xE0 && (start[1] & 0x06) != 0) {
    return MpegLook::kFrameSync;
  }
  return MpegLook::kNone;
}

}  // namespace

std::unique_ptr<AudioSource> open_audio_source(const std::filesystem::path& path) {
  check_is_nonempty_regular_file(path);
  check_header(path);
  // libsndfile decodes MPEG audio through libmpg123, which prints its complaints about a damaged
  // file ("Unknown text encoding 76, I take no chances, sorry!") to stderr, where neither -q nor
  // parley's wording reaches them; libav's messages go through parley's logger. So whatever
  // looks like MPEG audio, even when libav's demuxer does not take it for MP3 (a damaged tag or
  // frame), never reaches libsndfile.
  const MpegLook look = mpeg_look(path);
  std::string sndfile_reason;
  if (look == MpegLook::kNone && !is_mpeg_audio(path)) {
    if (auto source = open_sndfile_source(path, sndfile_reason)) {
      return checked(std::move(source), path);
    }
  }
  std::string libav_reason;
  if (auto source = open_libav_source(path, libav_reason)) return checked(std::move(source), path);
  if (look != MpegLook::kNone) {
    fail(
        "{}: starts like an MP3 ({}) but holds no audio that libav can decode: {}; the file is "
        "damaged: convert or re-export it (e.g. to WAV or FLAC)",
        path.string(), look == MpegLook::kId3Tag ? "an ID3 tag" : "an MPEG frame header",
        as_clause(libav_reason));
  }
  if (sndfile_reason.empty()) {
    fail(
        "{}: looks like MPEG audio but libav cannot decode it: {}; the file is damaged: convert "
        "or re-export it (e.g. to WAV or FLAC)",
        path.string(), as_clause(libav_reason));
  }
  fail(
      "{}: not audio that parley can decode (libsndfile: {}; libav: {}); check that it is a "
      "recording, or convert it to WAV or FLAC",
      path.string(), sndfile_clause(sndfile_reason), as_clause(libav_reason));
}

void warn_if_cut_short(const std::filesystem::path& path, const AudioInfo& info,
                       std::int64_t frames_decoded) {
  if (info.frames_exact || !info.frames ||
      static_cast<double>(frames_decoded) >= 0.9 * static_cast<double>(*info.frames)) {
    return;
  }
  spdlog::warn(
      "{}: decoded {:.1f} s of the {:.1f} s its header announces; the file was probably cut "
      "short, and only what is there is diarized",
      path.string(), static_cast<double>(frames_decoded) / info.sample_rate,
      static_cast<double>(*info.frames) / info.sample_rate);
}

}  // namespace parley::audio
