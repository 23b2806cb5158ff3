// Names from models as text that is safe to show and to store: valid UTF-8 kept, everything else
// escaped, so a name with newlines, quotes or stray bytes cannot break a terminal, a JSON file or
// an error message (Python decodes messages as UTF-8).
#pragma once

#include <string>

namespace kiln::runtime {

// `text` with each byte that is not part of a valid UTF-8 sequence written as the four
// characters \xNN. Valid UTF-8 comes back unchanged.
std::string ValidUtf8(const std::string& text);

// `text` for a terminal: printable characters as they are (valid UTF-8 included), and \", \\,
// \n, \r, \t, and \xNN for each byte of other control characters (C0, C1, line separators and
// bidirectional overrides) and of invalid bytes.
std::string EscapeForDisplay(const std::string& text);

}  // namespace kiln::runtime
