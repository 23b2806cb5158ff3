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

// Whether the valid sequence of `length` bytes at text[i] is a character a terminal may act on:
// C1 controls (U+0080-U+009F), line and paragraph separators (U+2028, U+2029) and bidirectional
// overrides (U+202A-U+202E, U+2066-U+2069).
bool IsInvisibleControl(const std::string& text, size_t i, size_t length) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(text[i + k]); };
  if (length == 2) return byte(0) == 0xC2 && byte(1) <= 0x9F;
  if (length != 3 || byte(0) != 0xE2) return false;
  return (byte(1) == 0x80 && byte(2) >= 0xA8 && byte(2) <= 0xAE) ||
         (byte(1) == 0x81 && byte(2) >= 0xA6 && byte(2) <= 0xA9);
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
      if (IsInvisibleControl(text, i, length)) {
        for (size_t k = 0; k < length; ++k) out += Hex(static_cast<unsigned char>(text[i + k]));
      } else {
        out.append(text, i, length);
      }
      i += length;
      continue;
    }
    ++i;
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        out += length == 1 && c >= 0x20 && c != 0x7F ? std::string(1, static_cast<char>(c)) : Hex(c);
    }
  }
  return out;
}

}  // namespace kiln::runtime
