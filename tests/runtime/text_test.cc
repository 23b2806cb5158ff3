// Escaping names: valid UTF-8 (2, 3 and 4 bytes) is kept, and every byte that does not belong to
// a valid sequence (stray continuation bytes, overlong forms, surrogates, truncated sequences,
// bytes past U+10FFFF) becomes \xNN; for display, quotes, backslashes and control characters are
// escaped too.
#include <gtest/gtest.h>

#include "runtime/text.h"

namespace kiln::runtime {
namespace {

TEST(Text, ValidUtf8KeepsValidSequencesAndEscapesTheRest) {
  EXPECT_EQ(ValidUtf8("plain \"name\" \\ #\n"), "plain \"name\" \\ #\n");
  EXPECT_EQ(ValidUtf8("h\xC3\xA9llo \xE6\x97\xA5 \xF0\x9F\x98\x80"), "h\xC3\xA9llo \xE6\x97\xA5 \xF0\x9F\x98\x80");
  EXPECT_EQ(ValidUtf8("a\x80" "b"), "a\\x80b");                 // a continuation byte alone
  EXPECT_EQ(ValidUtf8("\xC0\xAF"), "\\xC0\\xAF");               // overlong '/'
  EXPECT_EQ(ValidUtf8("\xED\xA0\x80"), "\\xED\\xA0\\x80");       // a surrogate
  EXPECT_EQ(ValidUtf8("\xE6\x97"), "\\xE6\\x97");               // cut short
  EXPECT_EQ(ValidUtf8("\xF5\x80\x80\x80"), "\\xF5\\x80\\x80\\x80");  // past U+10FFFF
  EXPECT_EQ(ValidUtf8("\xFF\xFE"), "\\xFF\\xFE");
  // The second byte's range for the lead bytes E0, ED, F0 and F4, on both sides of each bound.
  EXPECT_EQ(ValidUtf8("\xE0\x80\x80"), "\\xE0\\x80\\x80");
  EXPECT_EQ(ValidUtf8("\xE0\xA0\x80"), "\xE0\xA0\x80");
  EXPECT_EQ(ValidUtf8("\xED\x9F\xBF"), "\xED\x9F\xBF");
  EXPECT_EQ(ValidUtf8("\xF0\x80\x80\x80"), "\\xF0\\x80\\x80\\x80");
  EXPECT_EQ(ValidUtf8("\xF0\x90\x80\x80"), "\xF0\x90\x80\x80");
  EXPECT_EQ(ValidUtf8("\xF4\x8F\xBF\xBF"), "\xF4\x8F\xBF\xBF");
  EXPECT_EQ(ValidUtf8("\xF4\x90\x80\x80"), "\\xF4\\x90\\x80\\x80");
}

TEST(Text, EscapeForDisplayEscapesControlsQuotesAndInvalidBytes) {
  EXPECT_EQ(EscapeForDisplay("in\"put\\x\n\r\t\x01\x7F"), "in\\\"put\\\\x\\n\\r\\t\\x01\\x7F");
  EXPECT_EQ(EscapeForDisplay("h\xC3\xA9llo */ #"), "h\xC3\xA9llo */ #");
  EXPECT_EQ(EscapeForDisplay("bad\xFF"), "bad\\xFF");
  // C1 controls, line separators and bidirectional overrides are valid UTF-8 but act on terminals.
  EXPECT_EQ(EscapeForDisplay("a\xC2\x9B" "b\xE2\x80\xAE" "c\xE2\x80\xA8" "d\xE2\x81\xA6" "e\xC2\xA0"),
            "a\\xC2\\x9Bb\\xE2\\x80\\xAEc\\xE2\\x80\\xA8d\\xE2\\x81\\xA6e\xC2\xA0");
}

}  // namespace
}  // namespace kiln::runtime
