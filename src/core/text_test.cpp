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

TEST(ReplaceAll, ReplacesEveryOccurrenceOnce) {
  EXPECT_EQ(replace_all("/tmp/a.json:3: bad; /tmp/a.json", "/tmp/a.json", "kept.json"),
            "kept.json:3: bad; kept.json");
  // A replacement that holds what it replaces is not searched again.
  EXPECT_EQ(replace_all("aXa", "a", "aa"), "aaXaa");
  EXPECT_EQ(replace_all("abc", "", "x"), "abc");
  EXPECT_EQ(replace_all("abc", "d", "x"), "abc");
}

}  // namespace
}  // namespace parley
