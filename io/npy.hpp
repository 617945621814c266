// Reading and writing 1-D .npy arrays of float32 or float64 (little-endian,
// C order), the format numpy's np.save writes.
#pragma once

#include <filesystem>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "io/input_error.hpp"

namespace fplab {

using NumberArray = std::variant<std::vector<float>, std::vector<double>>;

// Throws InputError (a one-line message naming the file) for an unreadable,
// truncated or malformed file, a dtype other than <f4/<f8, Fortran order,
// or more than one dimension.
NumberArray read_npy(const std::filesystem::path& path);

void write_npy(const std::filesystem::path& path, std::span<const float> x);
void write_npy(const std::filesystem::path& path, std::span<const double> x);

}  // namespace fplab
