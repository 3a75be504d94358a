#pragma once
// A decoder that delivers a file's samples as interleaved float32 at the file's own rate and
// channel count, one block at a time, so that a long recording never has to sit in memory whole.
// Two backends implement it: libsndfile (WAV/FLAC/Ogg and friends) and libav (MP3 and what else
// ffmpeg's libraries decode: m4a, mp4, aac, webm, ...). open_audio_source() picks one.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>

namespace parley::audio {

// Bounds on the sample rate of audio parley takes, from a file's header or from a caller's
// samples; outside them the audio is damaged or mislabelled, and decoding would need absurd
// buffers (a 1 Hz file becomes 16000 times longer at 16 kHz).
inline constexpr int kMinSampleRate = 1000;
inline constexpr int kMaxSampleRate = 768000;

// What a file says about itself before any sample is decoded.
struct AudioInfo {
  int sample_rate = 0;
  int channels = 0;
  // Frames (samples per channel) the header declares; exact for PCM/FLAC read by libsndfile, an
  // estimate from the container's duration for libav, absent when the container does not say.
  std::optional<std::int64_t> frames;
  bool frames_exact = false;
  std::string container;  // e.g. "WAV (Microsoft)", "QuickTime / MOV"
  std::string codec;      // e.g. "Signed 16 bit PCM", "AAC (Advanced Audio Coding)"
  std::string backend;    // "libsndfile" or "libav"

  // Duration in seconds from `frames`, when known.
  std::optional<double> duration_seconds() const {
    if (!frames || sample_rate <= 0) return std::nullopt;
    return static_cast<double>(*frames) / sample_rate;
  }
};

// How far decoding has got, for progress display. Bytes are positions in the file.
struct DecodeProgress {
  std::int64_t frames_decoded = 0;
  std::optional<std::int64_t> frames_total;
  std::int64_t bytes_consumed = 0;
  std::optional<std::int64_t> bytes_total;

  // Completed fraction in [0, 1]: by frames when the total is known, else by bytes.
  std::optional<double> fraction() const;
};

class AudioSource {
 public:
  virtual ~AudioSource() = default;
  AudioSource() = default;
  AudioSource(const AudioSource&) = delete;
  AudioSource& operator=(const AudioSource&) = delete;

  virtual const AudioInfo& info() const = 0;

  // Fills `interleaved` (whose size must be a multiple of info().channels) with as many whole
  // frames as it can and returns how many frames it wrote; 0 means the end of the audio. Throws
  // parley::Error naming the file when the data is damaged.
  virtual std::size_t read(std::span<float> interleaved) = 0;

  virtual DecodeProgress progress() const = 0;
};

// Opens `path` for decoding: checks that it is a non-empty regular file, validates a RIFF/WAVE
// header itself (so damaged WAVs get a precise message), then tries libsndfile and, when
// libsndfile cannot open the file or it is MP3, libav. Throws parley::Error with a one-line message
// naming the file and the problem.
std::unique_ptr<AudioSource> open_audio_source(const std::filesystem::path& path);

// For the backends, at the end of a stream whose header only estimates its length (MP3, Ogg):
// warns when far less audio decoded than the header announces (100 kB of a 133 s MP3 decoded as
// 4.1 s without a word), since only what is there is diarized.
void warn_if_cut_short(const std::filesystem::path& path, const AudioInfo& info,
                       std::int64_t frames_decoded);

}  // namespace parley::audio
