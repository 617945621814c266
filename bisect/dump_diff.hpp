// The first divergent tensor between two dumps of one computation written
// by any program (fplab generate --dump, PyTorch forward hooks:
// docs/bisect.md), as any file io/array.hpp reads: safetensors files of
// float tensors (F64, F32, F16, BF16), torch.save files (.pt, any nesting
// of dicts, lists and tuples of tensors: io/torch_pt.hpp), .npy.
//
// Order: the order the dump lists its tensors (a program that dumps in
// execution order therefore gives the execution order): for safetensors
// the key order of the header's JSON object as written (the parsed header
// of io/safetensors_header.hpp sorts by name, so the order is read here
// from the raw header text); for a .pt file the order the object was
// saved in (a dict's insertion order), which read_arrays keeps. Tensors pair up by name; the first
// tensor of A's order whose elements' bits differ from B's is the first divergent one. Per tensor:
// elements whose bits differ, and the largest distance in ulps (numpy's nulp_diff,
// reports/array_diff.hpp; a NaN against a number counts as UINT64_MAX). A tensor only one side has,
// or with another shape or dtype, is listed as such and counts as divergent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "bisect/engine_dumps.hpp"

namespace fplab::bisect {

struct DumpTensor {
  enum class Status { identical, differs, only_in_a, only_in_b, shape_or_dtype };
  std::string name;
  Status status = Status::identical;
  std::string dtype;  // A's ("float32", ...)
  std::string shape;  // A's ("(5, 128)")
  std::size_t elements = 0;
  std::size_t moved = 0;  // elements whose bits differ
  std::uint64_t max_ulps = 0;
  std::string a, b;  // the element that moved most: "decimal (hex)"
};

struct DumpBisect {
  std::vector<DumpTensor> tensors;             // A's order, then those only B has (B's order)
  std::vector<std::string> rank_notes;         // "A: 'NAME': rank R differs from rank 0 ..."
  std::optional<std::size_t> first_divergent;  // index into tensors
  [[nodiscard]] std::size_t divergent() const;
};

// The tensor names of a dump in the order it lists them ("__metadata__"
// left out). Throws InputError for a damaged file.
std::vector<std::string> dump_order(const std::filesystem::path& path);

// A and B are files, or folders of per-rank engine dumps joined by
// bisect/engine_dumps.hpp under `rules` (the user's, before the defaults).
// Throws InputError (one line, naming the file) for a file io/array.hpp
// cannot read or ranks that do not join.
DumpBisect bisect_dumps(const std::filesystem::path& a, const std::filesystem::path& b,
                        const std::vector<ShardRule>& rules = {});

std::string_view name(DumpTensor::Status s);  // "identical", "differs", "only in A", ...

}  // namespace fplab::bisect
