#include "audio/audio_files_test_support.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/channel_layout.h>
}
#include <sndfile.h>

#include <cmath>
#include <fstream>
#include <memory>
#include <numbers>
#include <stdexcept>

#include <fmt/format.h>

#include "audio/mono_resampled_stream.h"

namespace parley::audio::testing {

std::vector<float> sine(double frequency, double sample_rate, std::size_t frames, float amplitude,
                        double phase) {
  std::vector<float> samples(frames);
  for (std::size_t index = 0; index < frames; ++index) {
    samples[index] =
        amplitude *
        static_cast<float>(std::sin(
            2.0 * std::numbers::pi * frequency * static_cast<double>(index) / sample_rate + phase));
  }
  return samples;
}

std::vector<float> interleave(const std::vector<std::vector<float>>& channels) {
  const std::size_t frames = channels.front().size();
  std::vector<float> interleaved(frames * channels.size());
  for (std::size_t frame = 0; frame < frames; ++frame) {
    for (std::size_t channel = 0; channel < channels.size(); ++channel) {
      interleaved[frame * channels.size() + channel] = channels[channel][frame];
    }
  }
  return interleaved;
}

void write_sndfile(const std::filesystem::path& path, int format, int sample_rate, int channels,
                   std::span<const float> interleaved) {
  SF_INFO info{};
  info.samplerate = sample_rate;
  info.channels = channels;
  info.format = format;
  SNDFILE* file = sf_open(path.c_str(), SFM_WRITE, &info);
  if (file == nullptr) {
    throw std::runtime_error(
        fmt::format("write_sndfile {}: {}", path.string(), sf_strerror(nullptr)));
  }
  const auto frames =
      static_cast<sf_count_t>(interleaved.size() / static_cast<std::size_t>(channels));
  const sf_count_t written = sf_writef_float(file, interleaved.data(), frames);
  const std::string error = sf_strerror(file);
  sf_close(file);
  if (written != frames) {
    throw std::runtime_error(fmt::format("write_sndfile {}: {}", path.string(), error));
  }
}

namespace {

void check_av(int status, const char* what) {
  if (status < 0) {
    char text[AV_ERROR_MAX_STRING_SIZE] = {};
    av_strerror(status, text, sizeof(text));
    throw std::runtime_error(fmt::format("write_with_libav: {}: {}", what, text));
  }
}

struct Encoder {
  AVFormatContext* format = nullptr;
  AVCodecContext* codec = nullptr;
  AVFrame* frame = nullptr;
  AVPacket* packet = nullptr;
  AVStream* stream = nullptr;
  ~Encoder() {
    av_packet_free(&packet);
    av_frame_free(&frame);
    avcodec_free_context(&codec);
    if (format != nullptr) {
      if (format->pb != nullptr) avio_closep(&format->pb);
      avformat_free_context(format);
    }
  }

  void drain_packets() {
    while (true) {
      const int status = avcodec_receive_packet(codec, packet);
      if (status == AVERROR(EAGAIN) || status == AVERROR_EOF) return;
      check_av(status, "receive packet");
      av_packet_rescale_ts(packet, codec->time_base, stream->time_base);
      packet->stream_index = stream->index;
      check_av(av_interleaved_write_frame(format, packet), "write packet");
    }
  }
};

}  // namespace

void write_with_libav(const std::filesystem::path& path, const std::string& muxer,
                      const std::string& encoder_name, int sample_rate, int channels,
                      std::span<const float> interleaved) {
  av_log_set_level(AV_LOG_ERROR);  // the aac encoder reports statistics at info level
  Encoder encoder;
  check_av(avformat_alloc_output_context2(&encoder.format, nullptr, muxer.c_str(), path.c_str()),
           "output context");
  const AVCodec* codec = avcodec_find_encoder_by_name(encoder_name.c_str());
  if (codec == nullptr) throw std::runtime_error("write_with_libav: no encoder " + encoder_name);
  encoder.stream = avformat_new_stream(encoder.format, nullptr);
  encoder.codec = avcodec_alloc_context3(codec);
  encoder.codec->sample_rate = sample_rate;
  av_channel_layout_default(&encoder.codec->ch_layout, channels);
  // Both encoders used by the tests take float samples; aac wants them planar.
  encoder.codec->sample_fmt = encoder_name == "aac" ? AV_SAMPLE_FMT_FLTP : AV_SAMPLE_FMT_FLT;
  encoder.codec->bit_rate = 96000;
  encoder.codec->time_base = AVRational{1, sample_rate};
  if ((encoder.format->oformat->flags & AVFMT_GLOBALHEADER) != 0) {
    encoder.codec->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  }
  check_av(avcodec_open2(encoder.codec, codec, nullptr), "open encoder");
  check_av(avcodec_parameters_from_context(encoder.stream->codecpar, encoder.codec), "parameters");
  encoder.stream->time_base = encoder.codec->time_base;
  check_av(avio_open(&encoder.format->pb, path.c_str(), AVIO_FLAG_WRITE), "open file");
  check_av(avformat_write_header(encoder.format, nullptr), "write header");

  encoder.frame = av_frame_alloc();
  encoder.packet = av_packet_alloc();
  const int frame_size = encoder.codec->frame_size > 0 ? encoder.codec->frame_size : 1024;
  const auto channel_count = static_cast<std::size_t>(channels);
  const std::size_t total_frames = interleaved.size() / channel_count;
  for (std::size_t start = 0; start < total_frames; start += static_cast<std::size_t>(frame_size)) {
    const std::size_t count =
        std::min<std::size_t>(static_cast<std::size_t>(frame_size), total_frames - start);
    av_frame_unref(encoder.frame);
    encoder.frame->nb_samples = static_cast<int>(count);
    encoder.frame->format = encoder.codec->sample_fmt;
    encoder.frame->sample_rate = sample_rate;
    check_av(av_channel_layout_copy(&encoder.frame->ch_layout, &encoder.codec->ch_layout),
             "layout");
    check_av(av_frame_get_buffer(encoder.frame, 0), "frame buffer");
    for (std::size_t frame = 0; frame < count; ++frame) {
      for (std::size_t channel = 0; channel < channel_count; ++channel) {
        const float value = interleaved[(start + frame) * channel_count + channel];
        if (encoder.codec->sample_fmt == AV_SAMPLE_FMT_FLTP) {
          reinterpret_cast<float*>(encoder.frame->extended_data[channel])[frame] = value;
        } else {
          reinterpret_cast<float*>(
              encoder.frame->extended_data[0])[frame * channel_count + channel] = value;
        }
      }
    }
    encoder.frame->pts = static_cast<std::int64_t>(start);
    check_av(avcodec_send_frame(encoder.codec, encoder.frame), "send frame");
    encoder.drain_packets();
  }
  check_av(avcodec_send_frame(encoder.codec, nullptr), "flush encoder");
  encoder.drain_packets();
  check_av(av_write_trailer(encoder.format), "write trailer");
}

void write_bytes(const std::filesystem::path& path, std::span<const std::uint8_t> bytes) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  if (!file) throw std::runtime_error("write_bytes: cannot write " + path.string());
}

std::vector<std::uint8_t> read_bytes(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(file),
                                   std::istreambuf_iterator<char>());
}

double tone_amplitude(std::span<const float> signal, double frequency, double sample_rate) {
  // Goertzel: the DFT bin at `frequency`, computed directly.
  const double omega = 2.0 * std::numbers::pi * frequency / sample_rate;
  double real = 0.0;
  double imaginary = 0.0;
  for (std::size_t index = 0; index < signal.size(); ++index) {
    const double phase = omega * static_cast<double>(index);
    real += signal[index] * std::cos(phase);
    imaginary -= signal[index] * std::sin(phase);
  }
  return 2.0 * std::hypot(real, imaginary) / static_cast<double>(signal.size());
}

double rms(std::span<const float> signal) {
  double sum = 0.0;
  for (const float value : signal) sum += static_cast<double>(value) * value;
  return signal.empty() ? 0.0 : std::sqrt(sum / static_cast<double>(signal.size()));
}

std::vector<float> read_all(const std::filesystem::path& path, std::size_t block) {
  MonoResampledStream stream(path);
  std::vector<float> all;
  std::vector<float> buffer(block);
  while (const std::size_t got = stream.read(buffer)) {
    all.insert(all.end(), buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(got));
  }
  return all;
}

}  // namespace parley::audio::testing
