#include "testing/temporary_directory.h"

#include <gtest/gtest.h>

#include <fstream>

namespace parley::testing {
namespace {

TEST(TemporaryDirectory, EachIsItsOwnFolderAndIsRemovedWithItsContents) {
  std::filesystem::path first_path;
  {
    const TemporaryDirectory first("label");
    const TemporaryDirectory second("label");
    first_path = first.path();
    EXPECT_TRUE(std::filesystem::is_directory(first.path()));
    EXPECT_NE(first.path(), second.path());
    EXPECT_NE(first.path().filename().string().find("parley-label-"), std::string::npos);
    std::filesystem::create_directories(first / "nested");
    std::ofstream(first / "nested" / "file.txt") << "contents";
  }
  EXPECT_FALSE(std::filesystem::exists(first_path));
}

}  // namespace
}  // namespace parley::testing
