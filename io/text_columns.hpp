// Columns of numbers in a text or CSV file, as io/array.hpp Arrays.
//
// One row per line; fields separated by commas (when the line has one) or
// else by white space; '#' starts a comment; blank lines are skipped. If
// the first row has a field that is not a number it is a header and names
// the columns; otherwise the columns are "column 1", "column 2", ..., and a
// file with a single column and no header gives one array named "" (so it
// compares with a lone .npy array). Numbers are decimal or C99 hex, rounded
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
