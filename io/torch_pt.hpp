// The tensors of a file written by torch.save, as io/array.hpp Arrays,
// read without libtorch and without running any of the pickle's code.
//
// Formats: the zip format (torch >= 1.6's default: a stored zip,
// io/zip_stored.hpp, holding <archive>/data.pkl, <archive>/data/<key> for
// each storage and an optional <archive>/byteorder, "little" or "big"),
// and the legacy format (_use_new_zipfile_serialization=False: magic
// number, protocol and system-info pickles, the object's pickle, the list
// of storage keys, then each storage as an 8-byte element count and its
// bytes). The pickle is read by io/torch_pickle.hpp's restricted unpickler.
//
// What is read: a tensor, or dicts (OrderedDicts included), lists and
// tuples of them nested to any depth up to 64. Names, in the order the
// object was saved (a dict's insertion order: the order a bisection needs):
//   - a lone tensor is named "";
//   - a dict's value is named by its key (a str, or an int in decimal),
//     a list's or tuple's by its index, joined to its parent's name by '.':
//     {"layer": {"attn": t, "mlp": [u, v]}} gives "layer.attn",
//     "layer.mlp.0", "layer.mlp.1".
// Two values that get one name are refused.
// Values: float64, float32, float16 and bfloat16 tensors keep their type
// and bits; integer and bool tensors, and Python ints, bools and floats in
// the object, are read as float64 (exact: every int8/16/32, uint8 and bool
// value, and an int64 within +-2^53; a larger int64 is refused), so that a
// comparison counts their changes; None and strings carry no numbers and
// are left out. A view keeps its own elements only: its storage offset,
// shape and strides are applied (a transposed or sliced tensor reads as
// torch prints it), after checking that every element it reaches lies
// inside its storage. Storages shared by several tensors are read once per
// tensor.
//
// Limits, so that no field sizes an allocation unchecked: each storage's
// bytes must be exactly its element count times its width, the output may
// hold at most 2^24 + 4 x (file bytes) elements in all (a stride-0 view
// repeats elements without bytes behind them), the object at most 2^20
// values visited.
// Errors are InputError("<file>: <why>"), one line.
#pragma once

#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "io/array.hpp"

namespace fplab {

std::vector<Array> read_pt_arrays(const std::filesystem::path& path);
// The same from bytes in memory; `label` names them in errors.
std::vector<Array> read_pt_arrays(std::span<const unsigned char> bytes, const std::string& label);

// True for bytes that begin like a torch.save file (a zip, or the legacy
// format's pickled magic number).
bool starts_like_pt(std::span<const unsigned char> bytes);

}  // namespace fplab
