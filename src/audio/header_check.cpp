#include "audio/header_check.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "core/error.h"

namespace parley::audio {
namespace {

std::uint32_t u32_le(const unsigned char* bytes) {
  return static_cast<std::uint32_t>(bytes[0]) | (static_cast<std::uint32_t>(bytes[1]) << 8) |
         (static_cast<std::uint32_t>(bytes[2]) << 16) |
         (static_cast<std::uint32_t>(bytes[3]) << 24);
}
std::uint16_t u16_le(const unsigned char* bytes) {
  return static_cast<std::uint16_t>(bytes[0] | (bytes[1] << 8));
}
std::uint32_t u32_be(const unsigned char* bytes) {
  return (static_cast<std::uint32_t>(bytes[0]) << 24) |
         (static_cast<std::uint32_t>(bytes[1]) << 16) |
         (static_cast<std::uint32_t>(bytes[2]) << 8) | static_cast<std::uint32_t>(bytes[3]);
}
std::uint16_t u16_be(const unsigned char* bytes) {
  return static_cast<std::uint16_t>((bytes[0] << 8) | bytes[1]);
}

// An AIFF sample rate: IEEE 754 80-bit extended, big-endian.
double extended_to_double(const unsigned char* bytes) {
  const int exponent = ((bytes[0] & 0x7F) << 8) | bytes[1];
  std::uint64_t mantissa = 0;
  for (int index = 0; index < 8; ++index) mantissa = (mantissa << 8) | bytes[2 + index];
  if (exponent == 0 && mantissa == 0) return 0.0;
  const double magnitude = std::ldexp(static_cast<double>(mantissa), exponent - 16383 - 63);
  return (bytes[0] & 0x80) != 0 ? -magnitude : magnitude;
}

// A chunk id as text, with bytes that are not printable ASCII shown as '?'.
std::string printable(std::string_view id) {
  std::string text(id);
  for (char& c : text) {
    if (c < 0x20 || c > 0x7E) c = '?';
  }
  return text;
}

bool is_chunk_id(std::string_view id) {
  return std::all_of(id.begin(), id.end(), [](char c) { return c >= 0x20 && c <= 0x7E; });
}

class HeaderReader {
 public:
  HeaderReader(const std::filesystem::path& path, std::ifstream& file, std::int64_t file_bytes,
               std::string_view format)
      : path_(path), file_(file), file_bytes_(file_bytes), format_(format) {}

  // Reads exactly `count` bytes at `offset`, or reports a header cut short.
  void read(std::int64_t offset, unsigned char* out, std::size_t count) {
    file_.clear();
    file_.seekg(offset);
    file_.read(reinterpret_cast<char*>(out), static_cast<std::streamsize>(count));
    if (static_cast<std::size_t>(file_.gcount()) != count) truncated_header();
  }

  [[noreturn]] void truncated_header() const {
    fail(
        "{}: truncated {} header: the file ends after {} bytes, inside the header; the file is "
        "damaged or was cut short",
        path_.string(), format_, file_bytes_);
  }

  void check_layout(std::int64_t channels, double sample_rate) const {
    if (channels == 0) {
      fail("{}: the {} header declares 0 channels; the file is damaged", path_.string(), format_);
    }
    if (!(sample_rate > 0)) {
      fail("{}: the {} header declares a sample rate of {} Hz; the file is damaged", path_.string(),
           format_, sample_rate);
    }
  }

  void check_data_size(std::int64_t declared_bytes, std::int64_t data_offset) const {
    const std::int64_t present = std::max<std::int64_t>(0, file_bytes_ - data_offset);
    if (declared_bytes > present) {
      fail(
          "{}: truncated: the {} header declares {} bytes of audio but only {} are present; the "
          "file was cut short (to decode what is there, rewrite it with "
          "`sox --ignore-length IN OUT`)",
          path_.string(), format_, declared_bytes, present);
    }
  }

  // A chunk whose size runs past the end of the file: a cut-short file or a damaged size.
  [[noreturn]] void chunk_past_end(std::string_view chunk_id, std::int64_t chunk_bytes) const {
    fail(
        "{}: the {} header's '{}' chunk claims {} bytes, more than the {} bytes of the whole "
        "file; the header is damaged or the file was cut short",
        path_.string(), format_, printable(chunk_id), chunk_bytes, file_bytes_);
  }

  [[noreturn]] void damaged(const std::string& what) const {
    fail("{}: the {} header {}; the file is damaged (rewrite it with sox or ffmpeg)",
         path_.string(), format_, what);
  }

  std::int64_t file_bytes() const { return file_bytes_; }

 private:
  const std::filesystem::path& path_;
  std::ifstream& file_;
  std::int64_t file_bytes_;
  std::string_view format_;
};

// The sample layout of a WAV format chunk: libsndfile decodes an impossible one (7-bit PCM, a
// block size that disagrees with the channels) as something rather than refusing it.
void check_wave_format(HeaderReader& reader, const std::array<unsigned char, 16>& format) {
  constexpr std::uint16_t kPcm = 1, kFloat = 3, kAlaw = 6, kMulaw = 7, kExtensible = 0xFFFE;
  const std::uint16_t tag = u16_le(format.data());
  const std::int64_t channels = u16_le(format.data() + 2);
  const std::int64_t block_align = u16_le(format.data() + 12);
  const std::int64_t bits = u16_le(format.data() + 14);
  if (tag != kPcm && tag != kFloat && tag != kAlaw && tag != kMulaw && tag != kExtensible) return;
  const bool bits_valid = tag == kFloat                   ? bits == 32 || bits == 64
                          : tag == kAlaw || tag == kMulaw ? bits == 8
                          : tag == kPcm ? bits == 8 || bits == 16 || bits == 24 || bits == 32
                                        : bits % 8 == 0 && bits >= 8 && bits <= 64;
  if (!bits_valid) {
    reader.damaged(
        fmt::format("declares {} bits per sample, which its sample format cannot hold", bits));
  }
  if (block_align != channels * (bits / 8)) {
    reader.damaged(fmt::format("declares {} bytes per frame, but {} channels of {} bits take {}",
                               block_align, channels, bits, channels * (bits / 8)));
  }
}

// Audio beyond the data chunk's declared size would be dropped without a word (a data chunk
// claiming 0 bytes with 10 s following decoded as silence). Only chunks may follow it.
void check_nothing_after_data(HeaderReader& reader, std::int64_t offset) {
  while (offset + 8 <= reader.file_bytes()) {
    std::array<unsigned char, 8> chunk{};
    reader.read(offset, chunk.data(), chunk.size());
    const std::string_view chunk_id(reinterpret_cast<const char*>(chunk.data()), 4);
    const std::int64_t chunk_bytes = u32_le(chunk.data() + 4);
    const std::int64_t next = offset + 8 + chunk_bytes + (chunk_bytes & 1);
    if (!is_chunk_id(chunk_id) || next > reader.file_bytes() + 1) {
      reader.damaged(fmt::format(
          "declares a data chunk that ends at byte {}, but the file goes on for {} more bytes "
          "that are not a chunk; decoding would drop them (to decode everything, rewrite it "
          "with `sox --ignore-length IN OUT`)",
          offset, reader.file_bytes() - offset));
    }
    offset = next;
  }
}

void check_riff_wave(HeaderReader& reader, bool rf64) {
  bool have_format = false;
  std::int64_t offset = 12;
  while (true) {
    std::array<unsigned char, 8> chunk{};
    reader.read(offset, chunk.data(), chunk.size());
    const std::string_view chunk_id(reinterpret_cast<const char*>(chunk.data()), 4);
    const std::int64_t chunk_bytes = u32_le(chunk.data() + 4);
    const std::int64_t payload_offset = offset + 8;
    if (chunk_id == "fmt ") {
      std::array<unsigned char, 16> format{};
      if (chunk_bytes < 16) reader.truncated_header();
      reader.read(payload_offset, format.data(), format.size());
      reader.check_layout(u16_le(format.data() + 2), u32_le(format.data() + 4));
      check_wave_format(reader, format);
      have_format = true;
    } else if (chunk_id == "data") {
      // A data chunk before any format chunk is for the decoders to judge. Writers that stream
      // to a pipe put 0 or 0xFFFFFFFF in the size, and RF64 keeps the real size elsewhere.
      const bool size_unknown = chunk_bytes == 0xFFFFFFFF || rf64;
      if (have_format && !size_unknown) {
        reader.check_data_size(chunk_bytes, payload_offset);
        check_nothing_after_data(reader, payload_offset + chunk_bytes + (chunk_bytes & 1));
      }
      return;
    }
    // Chunks are padded to an even length.
    offset = payload_offset + chunk_bytes + (chunk_bytes & 1);
    if (offset >= reader.file_bytes()) reader.chunk_past_end(chunk_id, chunk_bytes);
  }
}

void check_aiff(HeaderReader& reader) {
  bool have_common = false;
  std::int64_t offset = 12;
  while (true) {
    std::array<unsigned char, 8> chunk{};
    reader.read(offset, chunk.data(), chunk.size());
    const std::string_view chunk_id(reinterpret_cast<const char*>(chunk.data()), 4);
    const std::int64_t chunk_bytes = u32_be(chunk.data() + 4);
    const std::int64_t payload_offset = offset + 8;
    if (chunk_id == "COMM") {
      std::array<unsigned char, 18> common{};
      if (chunk_bytes < 18) reader.truncated_header();
      reader.read(payload_offset, common.data(), common.size());
      reader.check_layout(u16_be(common.data()), extended_to_double(common.data() + 8));
      have_common = true;
    } else if (chunk_id == "SSND") {
      // The sound data chunk starts with an 8-byte offset/block-size preamble.
      if (have_common && chunk_bytes >= 8) reader.check_data_size(chunk_bytes, payload_offset);
      return;
    }
    offset = payload_offset + chunk_bytes + (chunk_bytes & 1);
    if (offset >= reader.file_bytes()) reader.chunk_past_end(chunk_id, chunk_bytes);
  }
}

void check_au(HeaderReader& reader) {
  std::array<unsigned char, 24> header{};
  reader.read(0, header.data(), header.size());
  const std::int64_t data_offset = u32_be(header.data() + 4);
  const std::int64_t data_bytes = u32_be(header.data() + 8);
  reader.check_layout(u32_be(header.data() + 20), u32_be(header.data() + 16));
  if (data_offset < 24 || data_offset > reader.file_bytes()) reader.truncated_header();
  if (data_bytes != 0xFFFFFFFF) reader.check_data_size(data_bytes, data_offset);
}

}  // namespace

void check_header(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return;  // the decoders report unreadable files
  file.seekg(0, std::ios::end);
  const std::int64_t file_bytes = file.tellg();
  std::array<unsigned char, 12> start{};
  file.seekg(0);
  file.read(reinterpret_cast<char*>(start.data()), start.size());
  const auto available = static_cast<std::size_t>(file.gcount());
  const std::string_view magic(reinterpret_cast<const char*>(start.data()),
                               std::min<std::size_t>(available, 4));
  const std::string_view form_type =
      available >= 12 ? std::string_view(reinterpret_cast<const char*>(start.data()) + 8, 4)
                      : std::string_view();

  // A file that holds a RIFF or FORM magic but ends before its form type is a cut-short header.
  if (magic == "RIFF" || magic == "RF64") {
    HeaderReader reader(path, file, file_bytes, "WAV");
    if (available < 12) reader.truncated_header();
    if (form_type == "WAVE") check_riff_wave(reader, magic == "RF64");
  } else if (magic == "FORM") {
    HeaderReader reader(path, file, file_bytes, "AIFF");
    if (available < 12) reader.truncated_header();
    if (form_type == "AIFF" || form_type == "AIFC") check_aiff(reader);
  } else if (magic == ".snd") {
    HeaderReader reader(path, file, file_bytes, "AU");
    check_au(reader);
  }
}

}  // namespace parley::audio
