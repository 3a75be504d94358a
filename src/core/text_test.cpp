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

TEST(Counted, NounFollowsTheCount) {
  EXPECT_EQ(counted(1, "speaker"), "1 speaker");
  EXPECT_EQ(counted(0, "speaker"), "0 speakers");
  EXPECT_EQ(counted(2, "turn"), "2 turns");
  EXPECT_EQ(counted(1, "entry", "entries"), "1 entry");
  EXPECT_EQ(counted(5, "entry", "entries"), "5 entries");
}

}  // namespace
}  // namespace parley
