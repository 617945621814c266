// An array of floating-point numbers as people have them on disk: float64,
// float32, float16 or bfloat16, any shape, kept as the exact bit pattern of
// every element so that nothing is rounded or reinterpreted on the way in.
//
// read_arrays() is the one entry point that picks the reader from the file:
//   *.npy          one array (io/npy.hpp), named ""
//   *.safetensors  every tensor, by name, sorted (io/safetensors_arrays.hpp)
//   *.pt, *.pth, and any file that begins like one (a zip archive, or
//                  torch.save's legacy magic number): every tensor, in the
//                  order saved, named by its path in the saved object
//                  (io/torch_pt.hpp)
//   anything else  text columns of numbers (io/text_columns.hpp)
// Errors are fplab::InputError with a one-line message naming the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "io/float_bits.hpp"  // ElementType and its bits
#include "io/input_error.hpp"

namespace fplab {

struct Array {
  std::string name;  // tensor or column name; "" for a lone .npy array
  ElementType type = ElementType::float64;
  std::vector<std::size_t> shape;   // row-major (C order); {} is a scalar
  std::vector<std::uint64_t> bits;  // one IEEE bit pattern per element

  [[nodiscard]] std::size_t size() const { return bits.size(); }
  [[nodiscard]] std::string shape_text() const;  // "(2, 3)", "(5,)", "()"
};

struct ArrayReadOptions {
  // Text files hold decimal or hex numbers, rounded once to this type.
  ElementType text_type = ElementType::float64;
  // A .npy with descr '<V2' or '|V2' (2-byte void) is read as bfloat16:
  // that is how np.save writes ml_dtypes' bfloat16 arrays. Without this
  // flag such a file is refused, since a void type may be anything.
  bool void2_as_bfloat16 = false;
};

std::vector<Array> read_arrays(const std::filesystem::path& path,
                               const ArrayReadOptions& options = {});

// Which reader read_arrays picks for the file (the rule above): callers that
// treat named tensors or text differently ask here rather than test
// extensions themselves.
enum class ArrayFile { npy, safetensors, torch, text };
ArrayFile array_file_kind(const std::filesystem::path& path);

}  // namespace fplab
