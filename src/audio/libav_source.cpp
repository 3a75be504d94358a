#include "audio/libav_source.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/avutil.h>
#include <libavutil/error.h>
#include <libavutil/log.h>
}

#include <algorithm>
#include <array>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string_view>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "audio/error_text.h"
#include "core/error.h"
#include "core/text.h"

namespace parley::audio {

std::string libav_error_meaning(int code) {
  // libav's own words for these are an errno's ("Operation not permitted" for the -1 that many
  // decoders return on bad input) or a bare number; say what they mean for a recording.
  switch (code) {
    case AVERROR_INVALIDDATA:
    case AVERROR(EPERM):
    case AVERROR_BUG:
    case AVERROR_BUG2:
      return "its data is not valid for its format";
    case AVERROR_EOF:
      return "it ends in the middle of its data";
    case AVERROR_PATCHWELCOME:
    case AVERROR(ENOSYS):
      return "it uses a feature that libav's decoder does not implement";
    case AVERROR_DECODER_NOT_FOUND:
    case AVERROR_DEMUXER_NOT_FOUND:
      return "libav has no decoder for it";
    case AVERROR(ENOMEM):
      return "out of memory";
    default:
      break;
  }
  std::array<char, AV_ERROR_MAX_STRING_SIZE> text{};
  // av_strerror fails (and writes "Error number N occurred") for codes it has no words for: a
  // decoder's private failure, which on a recording means damaged data.
  if (av_strerror(code, text.data(), text.size()) < 0) {
    return fmt::format("its data is not valid for its format (libav error {})", code);
  }
  return as_clause(text.data());
}

namespace {

std::string av_error_text(int code) { return libav_error_meaning(code); }

// libav prints its diagnostics to stderr by default, which would break parley's one-line errors;
// route them to spdlog at debug level instead.
void forward_av_log(void* /*context*/, int level, const char* format, va_list arguments) {
  if (level > AV_LOG_WARNING || !spdlog::should_log(spdlog::level::debug)) return;
  std::array<char, 1024> line{};
  va_list copy;
  va_copy(copy, arguments);
  std::vsnprintf(line.data(), line.size(), format, copy);
  va_end(copy);
  std::string text(line.data());
  while (!text.empty() && text.back() == '\n') text.pop_back();
  spdlog::debug("libav: {}", text);
}

void quiet_libav_logging() {
  static std::once_flag once;
  std::call_once(once, [] { av_log_set_callback(forward_av_log); });
}

struct FormatContextCloser {
  void operator()(AVFormatContext* context) const { avformat_close_input(&context); }
};
struct CodecContextFreer {
  void operator()(AVCodecContext* context) const { avcodec_free_context(&context); }
};
struct PacketFreer {
  void operator()(AVPacket* packet) const { av_packet_free(&packet); }
};
struct FrameFreer {
  void operator()(AVFrame* frame) const { av_frame_free(&frame); }
};

// One sample of any libav sample format as float in [-1, 1] (integer formats are scaled by their
// full range, like libsndfile does).
float sample_as_float(const std::uint8_t* bytes, AVSampleFormat packed_format) {
  switch (packed_format) {
    case AV_SAMPLE_FMT_U8:
      return (static_cast<float>(*bytes) - 128.0f) / 128.0f;
    case AV_SAMPLE_FMT_S16: {
      std::int16_t value;
      std::memcpy(&value, bytes, sizeof(value));
      return static_cast<float>(value) / 32768.0f;
    }
    case AV_SAMPLE_FMT_S32: {
      std::int32_t value;
      std::memcpy(&value, bytes, sizeof(value));
      return static_cast<float>(static_cast<double>(value) / 2147483648.0);
    }
    case AV_SAMPLE_FMT_S64: {
      std::int64_t value;
      std::memcpy(&value, bytes, sizeof(value));
      return static_cast<float>(static_cast<double>(value) / 9223372036854775808.0);
    }
    case AV_SAMPLE_FMT_FLT: {
      float value;
      std::memcpy(&value, bytes, sizeof(value));
      return value;
    }
    case AV_SAMPLE_FMT_DBL: {
      double value;
      std::memcpy(&value, bytes, sizeof(value));
      return static_cast<float>(value);
    }
    default:
      return 0.0f;  // unreachable: formats are checked when the stream opens
  }
}

bool sample_format_supported(AVSampleFormat format) {
  switch (av_get_packed_sample_fmt(format)) {
    case AV_SAMPLE_FMT_U8:
    case AV_SAMPLE_FMT_S16:
    case AV_SAMPLE_FMT_S32:
    case AV_SAMPLE_FMT_S64:
    case AV_SAMPLE_FMT_FLT:
    case AV_SAMPLE_FMT_DBL:
      return true;
    default:
      return false;
  }
}

class LibavSource final : public AudioSource {
 public:
  LibavSource(std::filesystem::path path,
              std::unique_ptr<AVFormatContext, FormatContextCloser> format,
              std::unique_ptr<AVCodecContext, CodecContextFreer> codec, int stream_index,
              AudioInfo info, bool length_from_header)
      : path_(std::move(path)),
        format_(std::move(format)),
        codec_(std::move(codec)),
        packet_(av_packet_alloc()),
        frame_(av_frame_alloc()),
        stream_index_(stream_index),
        info_(std::move(info)),
        length_from_header_(length_from_header) {
    if (!packet_ || !frame_) throw std::bad_alloc();
  }

  const AudioInfo& info() const override { return info_; }

  std::size_t read(std::span<float> interleaved) override {
    const auto channels = static_cast<std::size_t>(info_.channels);
    const std::size_t wanted_frames = interleaved.size() / channels;
    std::size_t written_frames = 0;
    while (written_frames < wanted_frames) {
      if (pending_offset_ == pending_.size()) {
        if (!decode_next_frame()) break;
        continue;
      }
      const std::size_t pending_frames = (pending_.size() - pending_offset_) / channels;
      const std::size_t copy_frames = std::min(pending_frames, wanted_frames - written_frames);
      std::copy_n(pending_.begin() + static_cast<std::ptrdiff_t>(pending_offset_),
                  copy_frames * channels,
                  interleaved.begin() + static_cast<std::ptrdiff_t>(written_frames * channels));
      pending_offset_ += copy_frames * channels;
      written_frames += copy_frames;
    }
    frames_decoded_ += static_cast<std::int64_t>(written_frames);
    if (written_frames == 0 && wanted_frames > 0 && !reached_end_) {
      reached_end_ = true;
      if (length_from_header_) warn_if_cut_short(path_, info_, frames_decoded_);
    }
    return written_frames;
  }

  DecodeProgress progress() const override {
    DecodeProgress progress;
    progress.frames_decoded = frames_decoded_;
    progress.frames_total = info_.frames;
    if (format_->pb != nullptr) {
      progress.bytes_consumed = std::max<std::int64_t>(0, avio_tell(format_->pb));
      if (const std::int64_t size = avio_size(format_->pb); size >= 0) progress.bytes_total = size;
    }
    return progress;
  }

  ~LibavSource() override {
    if (skipped_packets_ > 0 && !failed_) {
      spdlog::warn("{}: skipped {} that libav could not decode", path_.string(),
                   counted(static_cast<std::size_t>(skipped_packets_), "damaged packet"));
    }
  }

 private:
  // Decodes the next frame into pending_; false at the end of the stream.
  bool decode_next_frame() {
    while (true) {
      const int received = avcodec_receive_frame(codec_.get(), frame_.get());
      if (received == 0) {
        convert_frame();
        av_frame_unref(frame_.get());
        if (!pending_.empty()) return true;
        continue;
      }
      if (received == AVERROR_EOF) return false;
      if (received != AVERROR(EAGAIN)) fail_damaged(received);
      // A decoder that wants input after it was told the stream ended has nothing more to give.
      if (draining_) return false;
      feed_decoder();
    }
  }

  // Sends the next packet of our stream to the decoder, or the end-of-stream signal.
  void feed_decoder() {
    while (true) {
      if (draining_) return;  // receive_frame will report AVERROR_EOF
      const int status = av_read_frame(format_.get(), packet_.get());
      if (status == AVERROR_EOF) {
        avcodec_send_packet(codec_.get(), nullptr);
        draining_ = true;
        return;
      }
      if (status < 0) fail_damaged(status);
      if (packet_->stream_index != stream_index_) {
        av_packet_unref(packet_.get());
        continue;
      }
      const int sent = avcodec_send_packet(codec_.get(), packet_.get());
      av_packet_unref(packet_.get());
      // Like ffmpeg, skip a damaged packet and go on; the count is reported once at the end.
      if (sent == AVERROR_INVALIDDATA) {
        ++skipped_packets_;
        continue;
      }
      if (sent < 0) fail_damaged(sent);
      return;
    }
  }

  // One message for a file that stops decoding: where, why, and what to do (the count of packets
  // skipped before is part of it, not a warning of its own).
  [[noreturn]] void fail_damaged(int code) {
    failed_ = true;
    const std::string skipped =
        skipped_packets_ > 0
            ? fmt::format(", after skipping {}",
                          counted(static_cast<std::size_t>(skipped_packets_), "damaged packet"))
            : "";
    fail(
        "{}: the {} audio is damaged {:.1f} s in: {}{}; parley reads no further. Convert or "
        "re-export the file (e.g. to WAV or FLAC), or cut it before that point",
        path_.string(), info_.codec,
        static_cast<double>(frames_decoded_) / static_cast<double>(info_.sample_rate),
        av_error_text(code), skipped);
  }

  void convert_frame() {
    const AVFrame& frame = *frame_;
    const int frame_channels = frame.ch_layout.nb_channels;
    if (frame_channels != info_.channels || frame.sample_rate != info_.sample_rate) {
      fail(
          "{}: the audio changes from {} channel(s) at {} Hz to {} channel(s) at {} Hz mid-stream; "
          "parley cannot decode that, convert the file to WAV first",
          path_.string(), info_.channels, info_.sample_rate, frame_channels, frame.sample_rate);
    }
    const auto format = static_cast<AVSampleFormat>(frame.format);
    if (!sample_format_supported(format)) {
      fail(
          "{}: libav decodes this audio to sample format '{}', which parley does not convert; "
          "convert the file to WAV first",
          path_.string(), av_get_sample_fmt_name(format));
    }
    const AVSampleFormat packed = av_get_packed_sample_fmt(format);
    const bool planar = av_sample_fmt_is_planar(format) != 0;
    const auto bytes_per_sample = static_cast<std::size_t>(av_get_bytes_per_sample(format));
    const auto channels = static_cast<std::size_t>(frame_channels);
    const auto frames = static_cast<std::size_t>(frame.nb_samples);
    pending_.resize(frames * channels);
    pending_offset_ = 0;
    for (std::size_t index = 0; index < frames; ++index) {
      for (std::size_t channel = 0; channel < channels; ++channel) {
        const std::uint8_t* bytes =
            planar ? frame.extended_data[channel] + index * bytes_per_sample
                   : frame.extended_data[0] + (index * channels + channel) * bytes_per_sample;
        pending_[index * channels + channel] = sample_as_float(bytes, packed);
      }
    }
  }

  std::filesystem::path path_;
  std::unique_ptr<AVFormatContext, FormatContextCloser> format_;
  std::unique_ptr<AVCodecContext, CodecContextFreer> codec_;
  std::unique_ptr<AVPacket, PacketFreer> packet_;
  std::unique_ptr<AVFrame, FrameFreer> frame_;
  int stream_index_;
  AudioInfo info_;
  std::vector<float> pending_;  // decoded interleaved samples not yet handed out
  std::size_t pending_offset_ = 0;
  bool draining_ = false;
  std::int64_t frames_decoded_ = 0;
  std::int64_t skipped_packets_ = 0;
  // A length estimated from the bitrate (ADTS AAC, MP3 without a Xing header) may be far off; only
  // one the container states (an MP3's Xing frame count, an MP4 header) says a file was cut short.
  bool length_from_header_;
  bool reached_end_ = false;
  bool failed_ = false;  // the error said everything, skipped packets included
};

}  // namespace

std::unique_ptr<AudioSource> open_libav_source(const std::filesystem::path& path,
                                               std::string& why_not) {
  quiet_libav_logging();
  AVFormatContext* raw_format = nullptr;
  if (const int opened = avformat_open_input(&raw_format, path.c_str(), nullptr, nullptr);
      opened < 0) {
    // No demuxer took the file: its bytes are no container libav knows.
    // (A probe that guessed wrong, e.g. MP3 "detected only with low score", fails with EINVAL.)
    why_not = opened == AVERROR_INVALIDDATA || opened == AVERROR(EINVAL) ? "format not recognised"
                                                                         : av_error_text(opened);
    return nullptr;
  }
  std::unique_ptr<AVFormatContext, FormatContextCloser> format(raw_format);
  if (const int found = avformat_find_stream_info(format.get(), nullptr); found < 0) {
    why_not = av_error_text(found);
    return nullptr;
  }
  const AVCodec* decoder = nullptr;
  const int stream_index =
      av_find_best_stream(format.get(), AVMEDIA_TYPE_AUDIO, -1, -1, &decoder, 0);
  if (stream_index < 0) {
    why_not = stream_index == AVERROR_DECODER_NOT_FOUND ? "no decoder for its audio stream"
                                                        : "no audio stream";
    return nullptr;
  }
  const AVStream* stream = format->streams[stream_index];
  std::unique_ptr<AVCodecContext, CodecContextFreer> codec(avcodec_alloc_context3(decoder));
  if (!codec) throw std::bad_alloc();
  if (const int copied = avcodec_parameters_to_context(codec.get(), stream->codecpar); copied < 0) {
    why_not = av_error_text(copied);
    return nullptr;
  }
  codec->pkt_timebase = stream->time_base;
  if (const int opened = avcodec_open2(codec.get(), decoder, nullptr); opened < 0) {
    why_not = fmt::format("cannot open the {} decoder: {}", decoder->name, av_error_text(opened));
    return nullptr;
  }

  AudioInfo info;
  info.sample_rate = codec->sample_rate;
  info.channels = codec->ch_layout.nb_channels;
  info.container =
      format->iformat->long_name != nullptr ? format->iformat->long_name : format->iformat->name;
  info.codec = decoder->long_name != nullptr ? decoder->long_name : decoder->name;
  info.backend = "libav";
  if (info.channels <= 0) {
    fail("{}: the {} stream declares {} channels; the file is damaged", path.string(),
         info.container, info.channels);
  }
  if (info.sample_rate <= 0) {
    fail("{}: the {} stream declares a sample rate of {} Hz; the file is damaged", path.string(),
         info.container, info.sample_rate);
  }
  const AVRational per_sample{1, info.sample_rate};
  if (stream->duration != AV_NOPTS_VALUE && stream->duration > 0) {
    info.frames = av_rescale_q(stream->duration, stream->time_base, per_sample);
  } else if (format->duration != AV_NOPTS_VALUE && format->duration > 0) {
    // Not AV_TIME_BASE_Q: that is a C compound literal, which clang refuses in C++.
    info.frames = av_rescale_q(format->duration, AVRational{1, AV_TIME_BASE}, per_sample);
  }
  const bool length_from_header = format->duration_estimation_method != AVFMT_DURATION_FROM_BITRATE;
  return std::make_unique<LibavSource>(path, std::move(format), std::move(codec), stream_index,
                                       std::move(info), length_from_header);
}

bool is_mpeg_audio(const std::filesystem::path& path) {
  quiet_libav_logging();
  AVFormatContext* raw_format = nullptr;
  if (avformat_open_input(&raw_format, path.c_str(), nullptr, nullptr) < 0) return false;
  const std::unique_ptr<AVFormatContext, FormatContextCloser> format(raw_format);
  return std::string_view(format->iformat->name) == "mp3";
}

}  // namespace parley::audio
