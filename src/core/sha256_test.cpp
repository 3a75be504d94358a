#include "core/sha256.h"
#include "testing/temporary_directory.h"

#include <gtest/gtest.h>

#include <fstream>

namespace parley {
namespace {

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256_text(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_text("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, FileMatchesBytes) {
  const parley::testing::TemporaryDirectory temp("sha256-test");
  const auto path = temp / "bytes.bin";
  std::string content(200000, 'x');
  for (std::size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>(i * 31 % 251);
  std::ofstream(path, std::ios::binary) << content;
  EXPECT_EQ(sha256_file(path), sha256_text(content));
}

TEST(Sha256, MissingFileIsAnError) {
  EXPECT_THROW(sha256_file("/nonexistent/parley/model.onnx"), std::runtime_error);
}

}  // namespace
}  // namespace parley
