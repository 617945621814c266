// The one parser of the safetensors format's header, shared by the array
// reader (io/safetensors_arrays.hpp) and the model loader
// (model/safetensors.hpp).
//
// A safetensors file is an 8-byte little-endian header length N, N bytes of
// JSON {name: {"dtype", "shape", "data_offsets": [begin, end]},
// "__metadata__": {string: string}}, then the data section; offsets are
// relative to its start.
//
// read_safetensors_header() reads the length and the header only, and checks
// everything before any tensor data is read or allocated for: the length
// within the file (and at most 100 MB, the spec's cap), JSON that parses to
// an object, __metadata__ an object of strings, and for every tensor a dtype
// the caller takes, a shape of non-negative integers, offsets begin <= end
// inside the data section, and end - begin equal to dtype size x element
// count (without overflow). A header that claims more data than the file
// holds is therefore refused having read only the header.
//
// Every problem throws InputError "<file>: <what>", one line; problems of a
// tensor read "<file>: tensor '<name>': <what>".
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <istream>
#include <map>
#include <string>
#include <vector>

#include "io/input_error.hpp"

namespace fplab {

struct SafetensorsEntry {
  std::string name;
  std::string dtype;              // as the header spells it: "F32", "BF16", ...
  std::size_t element_bytes = 0;  // what the caller's dtype table gave
  std::vector<std::size_t> shape;
  std::uint64_t begin = 0;  // byte offsets in the data section, checked
  std::uint64_t end = 0;
};

struct SafetensorsHeader {
  std::uint64_t data_start = 0;           // where the data section starts in the file (8 + N)
  std::uint64_t data_size = 0;            // its length in bytes
  std::vector<SafetensorsEntry> tensors;  // sorted by name
  std::map<std::string, std::string, std::less<>> metadata;
};

// What a reader takes: the element size in bytes of a dtype it reads, or 0
// to refuse it, and the message for a refused one (after "tensor '<name>': ").
struct SafetensorsDTypes {
  std::function<std::size_t(const std::string& dtype)> element_bytes;
  std::function<std::string(const std::string& dtype)> refusal;
};

// Reads from the start of `in`, a stream over the file `path` of `file_size`
// bytes; leaves `in` somewhere past the header.
SafetensorsHeader read_safetensors_header(std::istream& in, std::uint64_t file_size,
                                          const std::filesystem::path& path,
                                          const SafetensorsDTypes& dtypes);

// "[2,3]": how a shape appears in messages.
std::string safetensors_shape_text(const std::vector<std::size_t>& shape);

}  // namespace fplab
