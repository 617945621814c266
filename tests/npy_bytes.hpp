// A version-1 .npy file's bytes, for tests that write damaged or unusual
// headers by hand: `dict` is the header dictionary as numpy writes it.
#pragma once

#include <string>

namespace fplab::test {

inline std::string npy_bytes(const std::string& dict, const std::string& data) {
  std::string header = dict;
  // Padded so that magic + version + length + header is a multiple of 64.
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header.push_back('\n');
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xFF);
  out += static_cast<char>(header.size() >> 8);
  return out + header + data;
}

}  // namespace fplab::test
