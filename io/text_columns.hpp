// Columns of numbers in a text or CSV file, as io/array.hpp Arrays.
//
// One row per line; fields separated by commas (when the line has one) or
// else by white space; '#' starts a comment; blank lines are skipped. If
// the first row has a field that is not a number it is a header and names
// the columns, one 1-D array each; otherwise the file is one array named ""
// (so it compares with a lone .npy array): 1-D for a single column, else a
// rows x columns matrix in row-major order (np.savetxt of a 2-D array read
// back as that array). Numbers are decimal or C99 hex, rounded
// once to `type` (float32 or float64). Every row must have as many fields
// as the first; errors name the file and the line.
#pragma once

#include <filesystem>
#include <vector>

#include "io/array.hpp"

namespace fplab {

std::vector<Array> read_text_columns(const std::filesystem::path& path, ElementType type);

// True when the first row (after comments and blank lines) has a field that
// is not a number: a header naming the columns.
bool text_columns_have_header(const std::filesystem::path& path);

// True when the file's numbers look written from float32 data: each one,
// read as float64, is a float32 value (np.savetxt's '%.18e' of float32) or
// has at most 9 significant digits (float32's shortest decimal, '%.9g').
// `fplab diff` warns when such files are compared as float64, where one
// float32 step is 2^29 float64 ulps.
bool text_columns_look_float32(const std::filesystem::path& path);

}  // namespace fplab
