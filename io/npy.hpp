// Reading and writing .npy arrays, the format numpy's np.save writes.
//
// read_npy_array() takes what people have: float64, float32 and float16
// ('<f8', '<f4', '<f2'), big-endian as well ('>f8', ...), bfloat16 saved by
// ml_dtypes (descr '<V2' or '|V2', only with NpyReadOptions::void2_as_bfloat16,
// since a 2-byte void may be anything), any number of dimensions, C or
// Fortran order (returned in C order). Every element is converted to the
// host's order as it is read, so a big-endian host reads the same bits.
//
// Before reading any data it checks that the file holds exactly the bytes
// that dtype x shape promise: a header claiming more (or a shape whose
// element count overflows) is refused without allocating for it.
//
// read_npy() is the narrow form the summation code uses: 1-D float32 or
// float64 only. write_npy() always writes little-endian 1-D '<f4'/'<f8';
// write_npy_array() an Array of any shape.
#pragma once

#include <filesystem>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "io/array.hpp"
#include "io/input_error.hpp"

namespace fplab {

using NumberArray = std::variant<std::vector<float>, std::vector<double>>;

struct NpyReadOptions {
  bool void2_as_bfloat16 = false;  // read descr '<V2'/'|V2' as bfloat16
};

// Throws InputError (a one-line message naming the file) for an unreadable,
// truncated or malformed file, data that does not match the header, or a
// dtype other than the float types above.
Array read_npy_array(const std::filesystem::path& path, const NpyReadOptions& options = {});

// As read_npy_array, but only 1-D float32 or float64 (either byte order).
NumberArray read_npy(const std::filesystem::path& path);

void write_npy(const std::filesystem::path& path, std::span<const float> x);
void write_npy(const std::filesystem::path& path, std::span<const double> x);
// Any shape, float16, float32 or float64, little-endian C order, each
// element's bits as they are; throws std::invalid_argument for bfloat16.
void write_npy_array(const std::filesystem::path& path, const Array& a);

}  // namespace fplab
