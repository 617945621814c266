// The floating-point tensors of a safetensors file as io/array.hpp Arrays,
// for comparing and summing people's own tensors: F64, F32, F16 and BF16
// (the data section is little-endian; elements are converted to the host's
// order, so a big-endian host reads the same bits).
//
// The file is checked before any tensor data is read, by the one header
// parser io/safetensors_header.hpp (which the model loader,
// model/safetensors.hpp, uses too): header length within the file, JSON
// that parses, every tensor's dtype, shape and data_offsets consistent and
// inside the data section. A tensor of another dtype (I32, U8, ...) is an
// error naming it, not skipped: skipping would let a diff pass on a file it
// did not compare.
#pragma once

#include <filesystem>
#include <vector>

#include "io/array.hpp"

namespace fplab {

// Every tensor, sorted by name; "__metadata__" is ignored. Throws
// InputError "<file>: tensor '<name>': ..." on any problem.
std::vector<Array> read_safetensors_arrays(const std::filesystem::path& path);

// Writes the arrays as F64/F32/F16/BF16 tensors, in the order given, with
// the header padded to a multiple of 8 bytes.
void write_safetensors_arrays(const std::filesystem::path& path, const std::vector<Array>& arrays);

}  // namespace fplab
