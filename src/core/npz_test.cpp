#include "core/npz.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include "core/sanitizers.h"
#include "testing/shared_data.h"
#include "testing/temporary_directory.h"

namespace parley {
namespace {

TEST(Npy, RoundTripsFloat32Matrix) {
  NdArray<float> matrix({2, 3}, {1.f, 2.f, 3.f, 4.f, 5.f, 6.5f});
  const testing::TemporaryDirectory temp("npz-test");
  const auto path = temp / "matrix.npy";
  write_npy(path, NpyArray::from(matrix));
  const auto back = read_npy(path).as<float>();
  EXPECT_EQ(back.shape(), matrix.shape());
  EXPECT_EQ(back.values(), matrix.values());
}

TEST(Npy, ConvertsBetweenTypes) {
  NdArray<std::int64_t> labels({4}, {0, 1, 1, 2});
  const auto bytes = serialize_npy(NpyArray::from(labels));
  const auto as_double = parse_npy(bytes, "memory").as<double>();
  EXPECT_EQ(as_double.values(), (std::vector<double>{0, 1, 1, 2}));
}

TEST(Npy, ReordersFortranArrays) {
  // numpy.asfortranarray([[1, 2, 3], [4, 5, 6]], dtype='<i4') saved with np.save.
  std::string header = "{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }";
  header.append(128 - 10 - header.size() - 1, ' ');
  header.push_back('\n');
  std::vector<std::byte> file(10 + header.size() + 24);
  std::memcpy(file.data(), "\x93NUMPY\x01\x00", 8);
  file[8] = static_cast<std::byte>(header.size());
  std::memcpy(file.data() + 10, header.data(), header.size());
  const std::int32_t column_major[6] = {1, 4, 2, 5, 3, 6};
  std::memcpy(file.data() + 10 + header.size(), column_major, sizeof(column_major));
  const auto array = parse_npy(file, "fortran").as<int>();
  EXPECT_EQ(array.values(), (std::vector<int>{1, 2, 3, 4, 5, 6}));
}

TEST(Npy, RejectsGarbageWithMessage) {
  std::vector<std::byte> junk(40, std::byte{0x41});
  try {
    parse_npy(junk, "junk.npy");
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("junk.npy"), std::string::npos);
  }
}

// A shape whose byte count wraps around (2^32 x 2^32 floats is 0 modulo 2^64) passed as an empty
// array that claimed 2^32 chunks, and recluster crashed on it; a size past 2^64 threw from
// std::stoull (an internal error).
TEST(Npy, ShapesThatOverflowAreRefused) {
  for (const std::string shape :
       {"(4294967296, 4294967296, 1)", "(4, 4611686018427387904)", "(99999999999999999999999,)"}) {
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
    header.append(128 - 10 - header.size() - 1, ' ');
    header.push_back('\n');
    std::vector<std::byte> file(10 + header.size());
    std::memcpy(file.data(), "\x93NUMPY\x01\x00", 8);
    file[8] = static_cast<std::byte>(header.size());
    std::memcpy(file.data() + 10, header.data(), header.size());
    try {
      parse_npy(file, "saved/segmentations.npz:segmentations");
      FAIL() << shape << ": expected an error";
    } catch (const Error& error) {
      EXPECT_TRUE(std::string(error.what())
                      .starts_with("saved/segmentations.npz:segmentations: the .npy shape"))
          << error.what();
    }
  }
}

// fuzz_npz: a float64 array of 6.5e32 read as integers was undefined behaviour.
TEST(Npy, FloatsThatDoNotFitAnIntegerAreRefused) {
  const auto too_large = NpyArray::from(NdArray<double>({2}, {1.0, 6.5e32}));
  EXPECT_THROW(too_large.as<std::int64_t>(), Error);
  const auto not_a_number = NpyArray::from(NdArray<float>({1}, {std::nanf("")}));
  EXPECT_THROW(not_a_number.as<int>(), Error);
  const auto negative = NpyArray::from(NdArray<double>({1}, {-1.0}));
  EXPECT_THROW(negative.as<std::uint8_t>(), Error);
  EXPECT_EQ(NpyArray::from(NdArray<double>({2}, {-3.0, 2.5})).as<int>().values(),
            (std::vector<int>{-3, 2}));
}

TEST(Npz, RoundTripsSeveralArrays) {
  NpzArchive archive;
  archive["scores"] = NpyArray::from(NdArray<double>({2, 2}, {0.5, -1.0, 2.0, 3.25}));
  archive["labels"] = NpyArray::from(NdArray<std::int32_t>({3}, {2, 0, 1}));
  const testing::TemporaryDirectory temp("npz-test");
  const auto path = temp / "pair.npz";
  write_npz(path, archive);
  const auto back = read_npz(path);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(npz_get(back, "scores", path).as<double>().values(),
            (std::vector<double>{0.5, -1.0, 2.0, 3.25}));
  EXPECT_EQ(npz_get(back, "labels", path).as<int>().values(), (std::vector<int>{2, 0, 1}));
  EXPECT_THROW(npz_get(back, "missing", path), Error);
}

// Sets a zip member's uncompressed size in the local header and the central directory.
void claim_member_size(const std::filesystem::path& archive, std::uint32_t size) {
  std::ifstream in(archive, std::ios::binary);
  std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  in.close();
  const auto patch = [&](std::string_view signature, std::size_t offset) {
    const auto at = bytes.find(signature);
    ASSERT_NE(at, std::string::npos);
    for (std::size_t i = 0; i < 4; ++i) bytes[at + offset + i] = static_cast<char>(size >> (8 * i));
  };
  patch("PK\x03\x04", 22);
  patch("PK\x01\x02", 24);
  std::ofstream(archive, std::ios::binary | std::ios::trunc) << bytes;
}

// The sizes in an archive's directory are claims. fuzz_npz found a 1.5 kB file that made
// read_npz allocate the 3 GB it claimed; under a 1 GiB address-space limit that allocation
// throws std::bad_alloc, where reading what is there fails with parley's own message.
TEST(NpzDeathTest, AClaimedSizeIsNotAllocatedBeforeTheDataIsThere) {
#if defined(PARLEY_SANITIZED)
  GTEST_SKIP() << "sanitizers reserve more address space than the limit allows";
#endif
  NpzArchive archive;
  archive["scores"] = NpyArray::from(NdArray<double>({2, 2}, {0.5, -1.0, 2.0, 3.25}));
  const testing::TemporaryDirectory temp("npz-test");
  const auto path = temp / "claims.npz";
  write_npz(path, archive);
  claim_member_size(path, 0xC0000000u);
  const auto read_under_a_memory_limit = [&] {
    const rlimit limit{1u << 30, 1u << 30};
    setrlimit(RLIMIT_AS, &limit);
    try {
      read_npz(path);
    } catch (const Error& error) {
      std::_Exit(std::string(error.what()).find("truncated") != std::string::npos ? 0 : 3);
    } catch (...) {
      std::_Exit(1);
    }
    std::_Exit(2);
  };
  EXPECT_EXIT(read_under_a_memory_limit(), ::testing::ExitedWithCode(0), "");
}

// A flipped byte inside a stored (uncompressed) member keeps the archive's structure intact;
// only the CRC-32 tells. A PLDA archive damaged so must be refused, not read as other numbers.
TEST(Npz, AMemberWithABadCrcIsRefused) {
  NpzArchive archive;
  archive["mu"] = NpyArray::from(NdArray<double>({4}, {0.5, -1.0, 2.0, 3.25}));
  const testing::TemporaryDirectory temp("npz-test");
  const auto path = temp / "plda.npz";
  write_npz(path, archive);
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  // The last byte of the member's data: the last float64 of the array, before the directory.
  const auto directory = bytes.find("PK\x01\x02");
  ASSERT_NE(directory, std::string::npos);
  bytes[directory - 1] = static_cast<char>(bytes[directory - 1] ^ 0x40);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  try {
    read_npz(path);
    FAIL() << "an archive with a bad CRC was read";
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()),
              path.string() +
                  ": member 'mu.npy' fails its CRC-32 check (its bytes are not the ones the "
                  "archive recorded); the archive is damaged: copy or download it again");
  }
}

TEST(Npz, ReadsPyannoteGolden) {
  PARLEY_REQUIRE_SHARED(file, "goldens/pyannote-community1/02_pyannote_sample/segmentations.npz");
  const auto archive = read_npz(file);
  ASSERT_FALSE(archive.empty());
  const auto& first = archive.begin()->second;
  EXPECT_EQ(first.shape.size(), 3u);
  EXPECT_EQ(first.shape[1], 589u);
  EXPECT_EQ(first.shape[2], 3u);
}

}  // namespace
}  // namespace parley
