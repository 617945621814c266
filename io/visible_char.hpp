// A character as a reader can see it in a table cell or a sentence: the
// characters that print as nothing (or as a line break) get their name,
// every other one is itself. The model's vocabulary is single bytes.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace fplab {

// "space", "newline", "tab", "carriage return", a control byte as "byte
// 0xNN"; a printable byte (or a multi-byte text) unchanged.
inline std::string visible_char(std::string_view c) {
  if (c.size() != 1) return std::string(c);
  const auto b = static_cast<unsigned char>(c[0]);
  switch (b) {
    case ' ':
      return "space";
    case '\n':
      return "newline";
    case '\t':
      return "tab";
    case '\r':
      return "carriage return";
    default:
      break;
  }
  if (b < 0x20 || b == 0x7f) {
    char hex[16];
    std::snprintf(hex, sizeof hex, "byte 0x%02x", b);
    return hex;
  }
  return std::string(c);
}

}  // namespace fplab
