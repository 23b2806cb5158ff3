// Escaping names (see text.h).
#include "runtime/text.h"

#include <cstdio>

namespace kiln::runtime {
namespace {

// The length of the valid UTF-8 sequence starting at text[i], or 0 when the byte there does not
// start one (overlong forms, surrogates and code points past U+10FFFF are invalid).
size_t Utf8Length(const std::string& text, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char c = byte(i);
  if (c < 0x80) return 1;
  size_t length = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
  if (length == 0 || i + length > text.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  }
  unsigned char second = byte(i + 1);
  if ((c == 0xE0 && second < 0xA0) || (c == 0xED && second > 0x9F) || (c == 0xF0 && second < 0x90) ||
      (c == 0xF4 && second > 0x8F)) {
    return 0;
  }
  return length;
}

std::string Hex(unsigned char c) {
  char buffer[8];
  std::snprintf(buffer, sizeof(buffer), "\\x%02X", c);
  return buffer;
}

}  // namespace

std::string ValidUtf8(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    size_t length = Utf8Length(text, i);
    if (length == 0) {
      out += Hex(static_cast<unsigned char>(text[i++]));
    } else {
      out.append(text, i, length);
      i += length;
    }
  }
  return out;
}

std::string EscapeForDisplay(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    size_t length = Utf8Length(text, i);
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (length > 1) {
      out.append(text, i, length);
      i += length;
      continue;
    }
    ++i;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default: out += length == 1 && c >= 0x20 && c != 0x7F ? std::string(1, static_cast<char>(c)) : Hex(c);
    }
  }
  return out;
}

}  // namespace kiln::runtime
