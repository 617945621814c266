// One array out of a file, and its 1-D slices along an axis, as the numbers
// a command sums (`fplab sum FILE [--tensor NAME] [--axis K]`,
// reductions/sum_request.hpp).
//
// pick_array: a .npy's one array; else (.safetensors, .pt, a text file with
// a header row) the array named `tensor`, or the only one when `tensor` is
// empty. InputError (one line, naming the file and the command's --tensor)
// for a file holding several arrays and no name, a name it lacks, and a
// name given for a .npy.
//
// array_slices: without an axis one slice, every element in C order,
// labelled ""; with axis K, one slice per index of the other axes, in
// row-major order, each the elements along K in order, labelled by that
// multi-index with ':' at K ("[2, :, 1]"). An array with a 0-length axis
// has no slices along any axis (and one empty slice without one).
// InputError for K >= the number of axes.
//
// slice_values<T>: the slice's elements as T, exactly: T = double for a
// float64 array; T = float for float32, and for float16 and bfloat16,
// which widen exactly to float.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "io/array.hpp"

namespace fplab {

Array pick_array(const std::filesystem::path& file, const std::string& tensor,
                 const ArrayReadOptions& read);

struct ArraySlice {
  std::string label;                 // "" without an axis, else "[i, :, k]"
  std::vector<std::size_t> indices;  // into Array::bits
};
std::vector<ArraySlice> array_slices(const Array& a, std::optional<std::size_t> axis);

template <class T>
std::vector<T> slice_values(const Array& a, const std::vector<std::size_t>& indices) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "float or double");
  std::vector<T> out;
  out.reserve(indices.size());
  for (std::size_t i : indices) {
    if constexpr (sizeof(T) == 8) {
      out.push_back(std::bit_cast<double>(a.bits[i]));
    } else if (a.type == ElementType::float32) {
      out.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(a.bits[i])));
    } else {
      out.push_back(static_cast<float>(element_to_double(a.type, a.bits[i])));
    }
  }
  return out;
}

}  // namespace fplab
