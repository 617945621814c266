// Reading and writing 2-D .npy arrays of float32 or float64: `fplab
// collective`'s input, row r = rank r's contribution.
//
// read_npy_matrix() is io/npy.hpp's read_npy_array() (the one .npy parser:
// either byte order, C or Fortran order returned in C order, the header's
// size checked against the file before any data is read) narrowed to 2-D
// float32/float64. write_npy_matrix() writes little-endian C order.
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>
#include <variant>
#include <vector>

#include "io/input_error.hpp"

namespace fplab {

template <class T>
struct Matrix {
  std::size_t rows = 0, cols = 0;
  std::vector<T> values;  // rows * cols, row-major
};

using NumberMatrix = std::variant<Matrix<float>, Matrix<double>>;

// Throws InputError with a one-line message naming the file: unreadable,
// truncated, not .npy, a dtype other than float32/float64, or not 2-D.
NumberMatrix read_npy_matrix(const std::filesystem::path& path);

template <class T>
void write_npy_matrix(const std::filesystem::path& path, std::size_t rows, std::size_t cols,
                      std::span<const T> values);

}  // namespace fplab
