// What a file is, from its first bytes, for an error message that names it:
// a reader that finds a file is not its format says what the file is
// instead ("header length ... runs past the end of the file" alone does
// not tell a user they passed a config.json or a .npy).
#pragma once

#include <span>
#include <string>

namespace fplab {

// "a .npy array" (\x93NUMPY), "a GGUF file" (GGUF), "a zip archive (a
// PyTorch .pt file is one)" (PK\x03\x04), "a gzip file" (\x1f\x8b), "JSON
// text (a Hugging Face model is its directory, not its config.json)" (the
// first non-blank byte '{' or '['), "text" (printable ASCII, tabs and line
// ends only), or "" when the bytes match none of these.
std::string file_kind(std::span<const unsigned char> head);

}  // namespace fplab
