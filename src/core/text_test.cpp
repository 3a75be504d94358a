#include "core/text.h"

#include <gtest/gtest.h>

#include <string>

#include "core/error.h"

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

TEST(Utf8, ValidTextStaysAndOtherBytesAreEscaped) {
  EXPECT_TRUE(is_valid_utf8("caf\xC3\xA9 \xE4\xBC\x9A\xE8\xAD\xB0.wav"));
  EXPECT_FALSE(is_valid_utf8("caf\xE9.wav"));   // Latin-1
  EXPECT_FALSE(is_valid_utf8("\xC0\xAF"));      // overlong '/'
  EXPECT_FALSE(is_valid_utf8("\xED\xA0\x80"));  // a surrogate
  EXPECT_FALSE(is_valid_utf8("\xE4\xBC"));      // cut short
  EXPECT_EQ(utf8_or_escaped("caf\xC3\xA9.wav"), "caf\xC3\xA9.wav");
  EXPECT_EQ(utf8_or_escaped("caf\xE9.wav"), "caf\\xE9.wav");
  EXPECT_EQ(utf8_or_escaped("\xFF\xFE"), "\\xFF\\xFE");
  EXPECT_TRUE(is_valid_utf8(utf8_or_escaped("a\x80\xC3\xA9\xC3")));
}

TEST(Utf8, CutsNeverSplitACharacter) {
  const std::string text = "ab\xC3\xA9\xE4\xBC\x9A";  // a b e-acute (2 bytes) kai (3 bytes)
  EXPECT_EQ(cut_at_utf8_boundary(text, 100), text);
  EXPECT_EQ(cut_at_utf8_boundary(text, 3), "ab");
  EXPECT_EQ(cut_at_utf8_boundary(text, 4), "ab\xC3\xA9");
  EXPECT_EQ(cut_at_utf8_boundary(text, 6), "ab\xC3\xA9");
  EXPECT_EQ(cut_at_utf8_boundary(text, 0), "");
  EXPECT_EQ(cut_at_utf8_boundary("\xFF\xFF\xFF", 2), "\xFF\xFF");  // not UTF-8: by bytes
}

TEST(PathCheck, RefusesANulByteAndSaysWhatTheSystemWouldRead) {
  EXPECT_NO_THROW(check_path_has_no_nul("short.wav"));
  const std::filesystem::path hostile(std::string("short.wav\0evil.wav", 18));
  try {
    check_path_has_no_nul(hostile);
    FAIL() << "a path with a NUL was accepted";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("short.wav\\0evil.wav"), std::string::npos) << message;
    EXPECT_NE(message.find("NUL"), std::string::npos) << message;
    EXPECT_NE(message.find("'short.wav'"), std::string::npos) << message;
    EXPECT_EQ(message.find('\0'), std::string::npos);
  }
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
