#include "io/file_kind.hpp"

#include <algorithm>
#include <string_view>

namespace fplab {

namespace {

bool starts_with(std::span<const unsigned char> head, std::string_view magic) {
  return head.size() >= magic.size() &&
         std::equal(magic.begin(), magic.end(), head.begin(),
                    [](char m, unsigned char b) { return static_cast<unsigned char>(m) == b; });
}

bool blank(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

}  // namespace

std::string file_kind(std::span<const unsigned char> head) {
  if (starts_with(head, "\x93NUMPY")) return "a .npy array";
  if (starts_with(head, "GGUF")) return "a GGUF file";
  if (starts_with(head, "PK\x03\x04")) return "a zip archive (a PyTorch .pt file is one)";
  if (starts_with(head, "\x1f\x8b")) return "a gzip file";
  const auto first = std::find_if_not(head.begin(), head.end(), blank);
  if (first != head.end() && (*first == '{' || *first == '[')) {
    return "JSON text (a Hugging Face model is its directory, not its config.json)";
  }
  const bool printable =
      !head.empty() && std::all_of(head.begin(), head.end(), [](unsigned char c) {
        return blank(c) || (c >= 0x20 && c < 0x7f);
      });
  return printable ? "text" : "";
}

}  // namespace fplab
