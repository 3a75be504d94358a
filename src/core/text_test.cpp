#include "core/text.h"

#include <gtest/gtest.h>

namespace parley {
namespace {

TEST(Trim, DropsSurroundingAsciiWhitespaceOnly) {
  EXPECT_EQ(trim("  cuda\t"), "cuda");
  EXPECT_EQ(trim("\r\n a b \n"), "a b");
  EXPECT_EQ(trim("\v\fx\f"), "x");
  EXPECT_EQ(trim("inside  stays"), "inside  stays");
  EXPECT_EQ(trim(" \t\r\n"), "");
  EXPECT_EQ(trim(""), "");
}

}  // namespace
}  // namespace parley
