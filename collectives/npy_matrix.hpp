// Reading and writing 2-D .npy arrays (float32 or float64, little-endian,
// C order): `fplab collective`'s input, row r = rank r's contribution.
// (io/npy.hpp reads 1-D arrays only.)
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
// truncated, not .npy, a dtype other than <f4/<f8, Fortran order, or not
// 2-D.
NumberMatrix read_npy_matrix(const std::filesystem::path& path);

template <class T>
void write_npy_matrix(const std::filesystem::path& path, std::size_t rows, std::size_t cols,
                      std::span<const T> values);

}  // namespace fplab
