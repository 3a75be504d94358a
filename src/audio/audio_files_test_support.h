#pragma once
// Test helpers: synthetic signals and writers that produce audio files in
// every format the audio module reads (libsndfile for WAV/FLAC/Ogg/MP3, libav's encoders for
// m4a/mp4/aac/webm), so tests need no binary fixtures.
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace parley::audio::testing {

// amplitude * sin(2 pi frequency t + phase), `frames` samples at `sample_rate`.
std::vector<float> sine(double frequency, double sample_rate, std::size_t frames, float amplitude,
                        double phase = 0.0);

// Interleaves equally long channels.
std::vector<float> interleave(const std::vector<std::vector<float>>& channels);

// Writes interleaved float samples with libsndfile in `format` (SF_FORMAT_* major | subtype).
void write_sndfile(const std::filesystem::path& path, int format, int sample_rate, int channels,
                   std::span<const float> interleaved);

// Encodes interleaved float samples with libav: `muxer` (e.g. "ipod", "mp4", "adts", "webm") and
// `encoder` (e.g. "aac", "libopus").
void write_with_libav(const std::filesystem::path& path, const std::string& muxer,
                      const std::string& encoder, int sample_rate, int channels,
                      std::span<const float> interleaved);

void write_bytes(const std::filesystem::path& path, std::span<const std::uint8_t> bytes);
std::vector<std::uint8_t> read_bytes(const std::filesystem::path& path);

// Amplitude of the `frequency` component of `signal` (Goertzel), scaled so that a sine of
// amplitude A gives A.
double tone_amplitude(std::span<const float> signal, double frequency, double sample_rate);

double rms(std::span<const float> signal);

// Reads a whole stream in blocks of `block` samples.
std::vector<float> read_all(const std::filesystem::path& path, std::size_t block);

}  // namespace parley::audio::testing
