// People's own arrays as one experiment record of a results.json, so that
// `fplab diff` and `fplab report` take them beside fplab's own results
// (`fplab pack`, cli/pack_command.cpp; docs/drift.md).
//
// pack_arrays(experiment, inputs, text_type): each input is FILE or
// NAME=FILE, read by io/array.hpp's read_arrays (text numbers rounded to
// text_type). A .npy becomes one table NAME (default: the file's stem;
// "array" when that is empty) with one column "value"; a .safetensors or
// torch file one table per tensor, NAME.TENSOR (or TENSOR when NAME is not
// given); a text/CSV file with a header one table NAME with its columns,
// one without (a matrix) one table with a column "value", as a .npy. Rows
// are keyed by the element's index ("7", or "2,3" for an N-D array), each
// table's key titled "index". float64 and float32 keep their bits. '/' in a
// name, which a results path cannot hold, becomes '.'. The record's id and
// title are `experiment`, its description "Arrays packed by fplab pack: "
// and the inputs.
//
// Throws InputError (one line) for an empty experiment or one holding '/',
// a missing file, a float16 or bfloat16 array (results files hold float32
// and float64 only), and a table id packed twice; and what read_arrays
// throws.
#pragma once

#include <string>
#include <vector>

#include "io/float_bits.hpp"
#include "reports/results.hpp"

namespace fplab {

ExperimentRecord pack_arrays(const std::string& experiment, const std::vector<std::string>& inputs,
                             ElementType text_type);

}  // namespace fplab
