#include "core/npz.h"

#include <zip.h>

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <regex>

#include "core/atomic_file.h"
#include "core/error.h"

static_assert(std::endian::native == std::endian::little, "parley assumes a little-endian host");

namespace parley {
namespace {

struct TypeInfo {
  NpyType type;
  const char* descr;  // numpy dtype string, little-endian
  std::size_t width;
};

constexpr std::array<TypeInfo, 11> kTypes{{
    {NpyType::kBool, "|b1", 1},
    {NpyType::kInt8, "|i1", 1},
    {NpyType::kUInt8, "|u1", 1},
    {NpyType::kInt16, "<i2", 2},
    {NpyType::kUInt16, "<u2", 2},
    {NpyType::kInt32, "<i4", 4},
    {NpyType::kUInt32, "<u4", 4},
    {NpyType::kInt64, "<i8", 8},
    {NpyType::kUInt64, "<u8", 8},
    {NpyType::kFloat32, "<f4", 4},
    {NpyType::kFloat64, "<f8", 8},
}};

const TypeInfo& info_of(NpyType type) {
  for (const auto& info : kTypes) {
    if (info.type == type) return info;
  }
  fail("npy: unknown element type");
}

const TypeInfo& info_of_descr(const std::string& descr, const std::string& source) {
  // numpy writes one-byte types with '|' and may write '<' for them too.
  std::string normalized = descr;
  if (normalized.size() == 3 && (normalized[0] == '<' || normalized[0] == '=')) {
    normalized[0] = normalized[2] == '1' ? '|' : '<';
  }
  for (const auto& info : kTypes) {
    if (normalized == info.descr) return info;
  }
  fail(
      "{}: unsupported npy dtype '{}' (parley reads bool, signed/unsigned integers and "
      "float32/float64, little-endian)",
      source, descr);
}

template <typename Source, typename T>
void convert_into(const std::byte* bytes, std::size_t count, T* out) {
  for (std::size_t i = 0; i < count; ++i) {
    Source value;
    std::memcpy(&value, bytes + i * sizeof(Source), sizeof(Source));
    if constexpr (std::is_floating_point_v<Source> && std::is_integral_v<T> &&
                  !std::is_same_v<T, bool>) {
      // Converting NaN or a float beyond T's range is undefined behaviour, not a large number.
      const double limit = std::ldexp(1.0, std::numeric_limits<T>::digits);
      const bool fits = value >= (std::is_signed_v<T> ? -limit : 0.0) && value < limit;
      if (!fits) fail("npy: the value {} does not fit the integer array the reader expects", value);
    }
    out[i] = static_cast<T>(value);
  }
}

template <typename T>
constexpr NpyType type_for() {
  if constexpr (std::is_same_v<T, bool>)
    return NpyType::kBool;
  else if constexpr (std::is_same_v<T, std::int8_t>)
    return NpyType::kInt8;
  else if constexpr (std::is_same_v<T, std::uint8_t>)
    return NpyType::kUInt8;
  else if constexpr (std::is_same_v<T, std::int16_t>)
    return NpyType::kInt16;
  else if constexpr (std::is_same_v<T, std::uint16_t>)
    return NpyType::kUInt16;
  else if constexpr (std::is_same_v<T, std::int32_t>)
    return NpyType::kInt32;
  else if constexpr (std::is_same_v<T, std::uint32_t>)
    return NpyType::kUInt32;
  else if constexpr (std::is_same_v<T, std::int64_t>)
    return NpyType::kInt64;
  else if constexpr (std::is_same_v<T, std::uint64_t>)
    return NpyType::kUInt64;
  else if constexpr (std::is_same_v<T, float>)
    return NpyType::kFloat32;
  else if constexpr (std::is_same_v<T, double>)
    return NpyType::kFloat64;
  else
    static_assert(sizeof(T) == 0, "unsupported npy element type");
}

std::vector<std::byte> read_file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot open for reading", path.string());
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(chars.size());
  std::memcpy(bytes.data(), chars.data(), chars.size());
  return bytes;
}

}  // namespace

template <typename T>
NdArray<T> NpyArray::as() const {
  const std::size_t count = element_count();
  std::vector<T> values(count);
  const std::byte* raw = bytes.data();
  switch (type) {
    case NpyType::kBool:
      convert_into<std::uint8_t>(raw, count, values.data());
      break;
    case NpyType::kInt8:
      convert_into<std::int8_t>(raw, count, values.data());
      break;
    case NpyType::kUInt8:
      convert_into<std::uint8_t>(raw, count, values.data());
      break;
    case NpyType::kInt16:
      convert_into<std::int16_t>(raw, count, values.data());
      break;
    case NpyType::kUInt16:
      convert_into<std::uint16_t>(raw, count, values.data());
      break;
    case NpyType::kInt32:
      convert_into<std::int32_t>(raw, count, values.data());
      break;
    case NpyType::kUInt32:
      convert_into<std::uint32_t>(raw, count, values.data());
      break;
    case NpyType::kInt64:
      convert_into<std::int64_t>(raw, count, values.data());
      break;
    case NpyType::kUInt64:
      convert_into<std::uint64_t>(raw, count, values.data());
      break;
    case NpyType::kFloat32:
      convert_into<float>(raw, count, values.data());
      break;
    case NpyType::kFloat64:
      convert_into<double>(raw, count, values.data());
      break;
  }
  return NdArray<T>(shape, std::move(values));
}

template <typename T>
NpyArray NpyArray::from(std::vector<std::size_t> shape, std::span<const T> values) {
  NpyArray array;
  array.type = type_for<T>();
  array.shape = std::move(shape);
  if (values.size() != array.element_count()) {
    fail("npy: {} values do not fill the shape ({} expected)", values.size(),
         array.element_count());
  }
  array.bytes.resize(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(array.bytes.data(), values.data(), array.bytes.size());
  return array;
}

template <typename T>
NpyArray NpyArray::from(const NdArray<T>& array) {
  return from<T>(array.shape(), std::span<const T>(array.data(), array.size()));
}

#define PARLEY_NPY_INSTANTIATE(T)                                                    \
  template NdArray<T> NpyArray::as<T>() const;                                       \
  template NpyArray NpyArray::from<T>(std::vector<std::size_t>, std::span<const T>); \
  template NpyArray NpyArray::from<T>(const NdArray<T>&);
PARLEY_NPY_INSTANTIATE(float)
PARLEY_NPY_INSTANTIATE(double)
PARLEY_NPY_INSTANTIATE(std::int8_t)
PARLEY_NPY_INSTANTIATE(std::uint8_t)
PARLEY_NPY_INSTANTIATE(std::int32_t)
PARLEY_NPY_INSTANTIATE(std::int64_t)
#undef PARLEY_NPY_INSTANTIATE

NpyArray parse_npy(std::span<const std::byte> file, const std::string& source) {
  constexpr std::size_t kMagicSize = 6;
  if (file.size() < kMagicSize + 4 || std::memcmp(file.data(), "\x93NUMPY", kMagicSize) != 0) {
    fail("{}: not a .npy file (missing \\x93NUMPY magic)", source);
  }
  const auto major = static_cast<unsigned>(file[6]);
  std::size_t header_length = 0;
  std::size_t header_start = 0;
  if (major == 1) {
    header_length = static_cast<std::size_t>(file[8]) | (static_cast<std::size_t>(file[9]) << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (file.size() < 12) fail("{}: truncated .npy header", source);
    for (int i = 0; i < 4; ++i) header_length |= static_cast<std::size_t>(file[8 + i]) << (8 * i);
    header_start = 12;
  } else {
    fail("{}: unsupported .npy format version {}", source, major);
  }
  if (header_start + header_length > file.size()) fail("{}: truncated .npy header", source);
  const std::string header(reinterpret_cast<const char*>(file.data() + header_start),
                           header_length);

  static const std::regex descr_re(R"('descr'\s*:\s*'([^']+)')");
  static const std::regex order_re(R"('fortran_order'\s*:\s*(True|False))");
  static const std::regex shape_re(R"('shape'\s*:\s*\(([^)]*)\))");
  std::smatch match;
  if (!std::regex_search(header, match, descr_re)) fail("{}: .npy header lacks 'descr'", source);
  const TypeInfo& info = info_of_descr(match[1].str(), source);
  if (!std::regex_search(header, match, order_re)) {
    fail("{}: .npy header lacks 'fortran_order'", source);
  }
  const bool fortran_order = match[1].str() == "True";
  if (!std::regex_search(header, match, shape_re)) fail("{}: .npy header lacks 'shape'", source);

  NpyArray array;
  array.type = info.type;
  const std::string dims = match[1].str();
  static const std::regex number_re(R"(\d+)");
  // The byte count is checked as it is multiplied: a shape like (2^32, 2^32, 1) wraps to 0 bytes,
  // and its array would then claim sizes that no byte backs (recluster crashed on one).
  std::size_t payload = info.width;
  for (auto it = std::sregex_iterator(dims.begin(), dims.end(), number_re);
       it != std::sregex_iterator(); ++it) {
    const std::string digits = it->str();
    std::size_t size = 0;
    const auto parsed = std::from_chars(digits.data(), digits.data() + digits.size(), size);
    if (parsed.ec != std::errc{} ||
        (size != 0 && payload > std::numeric_limits<std::size_t>::max() / size)) {
      fail("{}: the .npy shape ({}) describes more bytes than any file holds; the file is damaged",
           source, dims);
    }
    array.shape.push_back(size);
    payload *= size;
  }
  const std::size_t data_start = header_start + header_length;
  if (file.size() - data_start < payload) {
    fail("{}: .npy data truncated ({} bytes present, {} expected)", source,
         file.size() - data_start, payload);
  }
  array.bytes.assign(file.begin() + static_cast<std::ptrdiff_t>(data_start),
                     file.begin() + static_cast<std::ptrdiff_t>(data_start + payload));

  if (fortran_order && array.shape.size() > 1) {
    // Reorder column-major bytes into row-major so every consumer sees C order.
    const std::size_t rank = array.shape.size();
    std::vector<std::byte> reordered(array.bytes.size());
    std::vector<std::size_t> index(rank, 0);
    for (std::size_t c_offset = 0; c_offset < array.element_count(); ++c_offset) {
      std::size_t f_offset = 0;
      std::size_t stride = 1;
      for (std::size_t axis = 0; axis < rank; ++axis) {
        f_offset += index[axis] * stride;
        stride *= array.shape[axis];
      }
      std::memcpy(reordered.data() + c_offset * info.width,
                  array.bytes.data() + f_offset * info.width, info.width);
      for (std::size_t axis = rank; axis-- > 0;) {
        if (++index[axis] < array.shape[axis]) break;
        index[axis] = 0;
      }
    }
    array.bytes = std::move(reordered);
  }
  return array;
}

std::vector<std::byte> serialize_npy(const NpyArray& array) {
  std::string shape_text = "(";
  for (std::size_t i = 0; i < array.shape.size(); ++i) {
    shape_text += std::to_string(array.shape[i]);
    shape_text += (array.shape.size() == 1 || i + 1 < array.shape.size()) ? "," : "";
    if (i + 1 < array.shape.size()) shape_text += " ";
  }
  shape_text += ")";
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
                                   info_of(array.type).descr, shape_text);
  // Pad so that magic + version + length + header is a multiple of 64, ending in '\n'.
  const std::size_t preamble = 10;
  const std::size_t total = ((preamble + header.size() + 1 + 63) / 64) * 64;
  header.append(total - preamble - header.size() - 1, ' ');
  header.push_back('\n');

  std::vector<std::byte> out(preamble + header.size() + array.bytes.size());
  std::memcpy(out.data(), "\x93NUMPY\x01\x00", 8);
  out[8] = static_cast<std::byte>(header.size() & 0xff);
  out[9] = static_cast<std::byte>((header.size() >> 8) & 0xff);
  std::memcpy(out.data() + preamble, header.data(), header.size());
  if (!array.bytes.empty()) {
    std::memcpy(out.data() + preamble + header.size(), array.bytes.data(), array.bytes.size());
  }
  return out;
}

NpyArray read_npy(const std::filesystem::path& path) {
  return parse_npy(read_file_bytes(path), path.string());
}

void write_npy(const std::filesystem::path& path, const NpyArray& array) {
  const std::vector<std::byte> bytes = serialize_npy(array);
  write_file_atomically(
      path, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

namespace {
struct ZipCloser {
  void operator()(zip_t* archive) const { zip_discard(archive); }
};
struct ZipSourceFreer {
  void operator()(zip_source_t* source) const { zip_source_free(source); }
};
struct ZipFileCloser {
  void operator()(zip_file_t* file) const { zip_fclose(file); }
};
}  // namespace

NpzArchive read_npz(const std::filesystem::path& path) {
  int error_code = 0;
  std::unique_ptr<zip_t, ZipCloser> archive(zip_open(path.c_str(), ZIP_RDONLY, &error_code));
  if (!archive) {
    zip_error_t error;
    zip_error_init_with_code(&error, error_code);
    std::string reason = zip_error_strerror(&error);
    zip_error_fini(&error);
    fail("{}: cannot open as .npz ({})", path.string(), reason);
  }
  NpzArchive result;
  const zip_int64_t entries = zip_get_num_entries(archive.get(), 0);
  for (zip_int64_t i = 0; i < entries; ++i) {
    zip_stat_t stat;
    if (zip_stat_index(archive.get(), static_cast<zip_uint64_t>(i), 0, &stat) != 0) {
      fail("{}: cannot read member {} of the archive", path.string(), i);
    }
    std::string name = stat.name;
    std::unique_ptr<zip_file_t, ZipFileCloser> member(
        zip_fopen_index(archive.get(), static_cast<zip_uint64_t>(i), 0));
    if (!member) fail("{}: cannot open member '{}'", path.string(), name);
    // The size in the archive's directory is only a claim (a damaged file may say 3 GB): read
    // block by block so that memory follows the data that is really there.
    constexpr zip_uint64_t kBlockBytes = 1 << 20;
    std::vector<std::byte> bytes;
    while (bytes.size() < stat.size) {
      const std::size_t filled = bytes.size();
      const zip_uint64_t wanted = std::min<zip_uint64_t>(kBlockBytes, stat.size - filled);
      bytes.resize(filled + wanted);
      const zip_int64_t read = zip_fread(member.get(), bytes.data() + filled, wanted);
      if (read <= 0) fail("{}: member '{}' is truncated or corrupt", path.string(), name);
      bytes.resize(filled + static_cast<std::size_t>(read));
    }
    // libzip compares a member's CRC-32 with the directory's only when it reads to the end, and
    // the loop above stops at the claimed size: read on until it reports the end (or the error).
    std::byte past_end{};
    const zip_int64_t rest = zip_fread(member.get(), &past_end, 1);
    if (rest < 0) {
      const bool crc = zip_error_code_zip(zip_file_get_error(member.get())) == ZIP_ER_CRC;
      fail("{}: member '{}' {}; the archive is damaged: copy or download it again", path.string(),
           name,
           crc ? "fails its CRC-32 check (its bytes are not the ones the archive recorded)"
               : fmt::format("cannot be read: {}", zip_file_strerror(member.get())));
    }
    if (rest > 0) {
      fail(
          "{}: member '{}' holds more bytes than the archive's directory says; the archive is "
          "damaged: copy or download it again",
          path.string(), name);
    }
    if (name.size() > 4 && name.ends_with(".npy")) name.resize(name.size() - 4);
    result.emplace(name, parse_npy(bytes, path.string() + ":" + name));
  }
  return result;
}

void write_npz(const std::filesystem::path& path, const NpzArchive& archive_contents) {
  // The archive is built in memory, then written atomically like every other output.
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* memory = zip_source_buffer_create(nullptr, 0, 0, &error);
  if (memory == nullptr)
    fail("{}: cannot build the archive: {}", path.string(), zip_error_strerror(&error));
  std::unique_ptr<zip_source_t, ZipSourceFreer> memory_owner(memory);
  zip_source_keep(memory);  // zip_close must leave the buffer for reading back
  zip_t* raw = zip_open_from_source(memory, ZIP_TRUNCATE, &error);
  if (raw == nullptr)
    fail("{}: cannot build the archive: {}", path.string(), zip_error_strerror(&error));
  std::unique_ptr<zip_t, ZipCloser> archive(raw);
  // zip_source_buffer borrows the bytes until zip_close, so they must outlive the loop.
  std::vector<std::vector<std::byte>> buffers;
  buffers.reserve(archive_contents.size());
  for (const auto& [name, array] : archive_contents) {
    buffers.push_back(serialize_npy(array));
    zip_source_t* source =
        zip_source_buffer(archive.get(), buffers.back().data(), buffers.back().size(), 0);
    if (source == nullptr) fail("{}: cannot add '{}'", path.string(), name);
    const zip_int64_t index =
        zip_file_add(archive.get(), (name + ".npy").c_str(), source, ZIP_FL_OVERWRITE);
    if (index < 0) {
      zip_source_free(source);
      fail("{}: cannot add '{}': {}", path.string(), name, zip_strerror(archive.get()));
    }
    zip_set_file_compression(archive.get(), static_cast<zip_uint64_t>(index), ZIP_CM_STORE, 0);
  }
  if (zip_close(archive.get()) != 0) {
    fail("{}: cannot build the archive: {}", path.string(), zip_strerror(archive.get()));
  }
  static_cast<void>(archive.release());  // zip_close freed it
  std::string bytes;
  if (zip_source_open(memory) != 0 || zip_source_seek(memory, 0, SEEK_END) != 0) {
    fail("{}: cannot read back the archive", path.string());
  }
  bytes.resize(static_cast<std::size_t>(zip_source_tell(memory)));
  zip_source_seek(memory, 0, SEEK_SET);
  const zip_int64_t read = zip_source_read(memory, bytes.data(), bytes.size());
  zip_source_close(memory);
  if (read < 0 || static_cast<std::size_t>(read) != bytes.size()) {
    fail("{}: cannot read back the archive", path.string());
  }
  write_file_atomically(path, bytes);
}

const NpyArray& npz_get(const NpzArchive& archive, const std::string& key,
                        const std::filesystem::path& source) {
  auto it = archive.find(key);
  if (it == archive.end()) {
    std::string keys;
    for (const auto& [name, array] : archive) keys += (keys.empty() ? "" : ", ") + name;
    fail("{}: no array '{}' (it holds: {})", source.string(), key, keys.empty() ? "nothing" : keys);
  }
  return it->second;
}

}  // namespace parley
