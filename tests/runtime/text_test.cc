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
}

TEST(Text, EscapeForDisplayEscapesControlsQuotesAndInvalidBytes) {
  EXPECT_EQ(EscapeForDisplay("in\"put\\x\n\r\t\x01\x7F"), "in\\\"put\\\\x\\n\\r\\t\\x01\\x7F");
  EXPECT_EQ(EscapeForDisplay("h\xC3\xA9llo */ #"), "h\xC3\xA9llo */ #");
  EXPECT_EQ(EscapeForDisplay("bad\xFF"), "bad\\xFF");
}

}  // namespace
}  // namespace kiln::runtime
