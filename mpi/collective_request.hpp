// What `fplab collective` is asked to do, as one value: every option of the
// command, parsed once (cli/collective_options.hpp: add_collective_options
// binds the command line to it) and written back by to_args(), the
// arguments after `fplab collective` that parse to an equal request
// (tests/test_collective_request.cpp round-trips a request with every
// option set, and fails for an option the parser declares that to_args
// never writes). And its run: run_collective, whose result the command
// prints.
//
// to_args() writes `--algorithm`, `--ranks`, `--file` and `--timeout`
// (shortest round-trip decimal) always, as `--NAME=VALUE`, and the flags
// when set.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fplab {

struct CollectiveRequest {
  std::string algorithm;   // a collective's name (collectives/algorithm.hpp)
  std::int64_t ranks = 0;  // P: the array's rows
  std::string file;        // a C-ordered P x m float32/float64 .npy
  bool json = false;
  bool mpi = false;      // also on Open MPI, every rank's bits compared
  double timeout = 120;  // seconds before a hung MPI job is killed

  bool operator==(const CollectiveRequest&) const = default;

  // The arguments after `fplab collective` (see the top).
  [[nodiscard]] std::vector<std::string> to_args() const;
};

// The order model's all-reduce of the request's array, against the exact
// one, and with `mpi` Open MPI's. Values are spelled as the command prints
// them: exact hex (%a) and shortest round-trip decimal.
struct CollectiveResult {
  std::string algorithm;  // the collective's name
  std::string resolved;   // resolved_algorithm's text
  std::size_t ranks = 0, m = 0;
  std::string dtype;  // "float32" or "float64"
  std::size_t element_bytes = 0;
  std::vector<std::string> hex, decimal;  // the model's m values
  // Per value: ulps from the exact all-reduce, or empty where equal (the
  // sign included).
  std::vector<std::optional<std::uint64_t>> ulps_from_exact;
  std::string sha256;  // of the model's result bytes
  std::size_t differ_from_exact = 0;
  std::uint64_t max_ulps_from_exact = 0;
  // With mpi:
  std::string mpi_reduction;         // the worker's spelling, "sum:4"
  std::vector<std::string> mpi_hex;  // rank 0's values
  bool agree = false;                // every rank equals the model bit for bit
  std::vector<std::size_t> mpi_ranks_differing_from_rank0;
};

// Throws InputError (one line) for an unknown algorithm, ranks outside
// 1..kMaxCollectiveRanks, an unreadable file, rows other than `ranks` or
// m = 0; and what mpi_allreduce throws.
CollectiveResult run_collective(const CollectiveRequest& r);

}  // namespace fplab
