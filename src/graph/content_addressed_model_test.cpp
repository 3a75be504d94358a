#include "graph/content_addressed_model.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/sha256.h"

namespace parley::graph {
namespace {
namespace fs = std::filesystem;

class ContentAddressedModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = fs::temp_directory_path() /
                 ("parley_content_addressed_test_" + std::to_string(::getpid())) / "models";
    fs::remove_all(directory_.parent_path());
  }
  void TearDown() override { fs::remove_all(directory_.parent_path()); }

  static std::string read(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  std::vector<fs::path> files() const {
    std::vector<fs::path> found;
    for (const auto& entry : fs::directory_iterator(directory_)) found.push_back(entry.path());
    return found;
  }

  fs::path directory_;
};

TEST_F(ContentAddressedModelTest, NamesTheFileByItsDigestAndWritesItOnce) {
  const std::string bytes = "model bytes";
  const auto first = write_content_addressed_model(bytes, "trunk", directory_);
  EXPECT_EQ(first.sha256, sha256_text(bytes));
  EXPECT_EQ(first.path, directory_ / ("trunk-" + first.sha256.substr(0, 16) + ".onnx"));
  EXPECT_EQ(read(first.path), bytes);
  const auto written_at = fs::last_write_time(first.path);

  const auto again = write_content_addressed_model(bytes, "trunk", directory_);
  EXPECT_EQ(again.path, first.path);
  EXPECT_EQ(again.sha256, first.sha256);
  EXPECT_EQ(fs::last_write_time(again.path), written_at) << "an existing file is not rewritten";
  EXPECT_EQ(files().size(), 1u) << "no staging file is left behind";

  const auto other = write_content_addressed_model("other bytes", "trunk", directory_);
  EXPECT_NE(other.path, first.path);
  EXPECT_EQ(files().size(), 2u);
}

TEST_F(ContentAddressedModelTest, ReplacesATruncatedFileWholly) {
  const std::string bytes(4096, 'x');
  const auto expected = write_content_addressed_model(bytes, "pooled", directory_);
  // A file cut short (a crash of an older writer, a full disk) under the right name.
  std::ofstream(expected.path, std::ios::binary | std::ios::trunc) << bytes.substr(0, 100);
  const auto repaired = write_content_addressed_model(bytes, "pooled", directory_);
  EXPECT_EQ(repaired.path, expected.path);
  EXPECT_EQ(read(repaired.path), bytes);
}

TEST_F(ContentAddressedModelTest, ConcurrentWritersLeaveOneCompleteFile) {
  std::string bytes(1 << 20, '\0');
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 131 % 251);
  std::vector<ContentAddressedModel> results(8);
  {
    std::vector<std::jthread> writers;
    for (std::size_t i = 0; i < results.size(); ++i) {
      writers.emplace_back(
          [&, i] { results[i] = write_content_addressed_model(bytes, "trunk", directory_); });
    }
  }
  for (const auto& result : results) EXPECT_EQ(result.path, results.front().path);
  EXPECT_EQ(read(results.front().path), bytes);
  EXPECT_EQ(files().size(), 1u) << "staging files are renamed or removed";
}

TEST_F(ContentAddressedModelTest, UnwritableDirectoryIsAClearError) {
  fs::create_directories(directory_.parent_path());
  std::ofstream(directory_) << "a file where the folder should be";
  try {
    write_content_addressed_model("bytes", "trunk", directory_);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find(directory_.string()), std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace parley::graph
