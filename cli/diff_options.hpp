// The command line of `fplab diff`, bound to a DiffRequest
// (reports/diff_request.hpp): the one parser of its options, shared by the
// command (cli/diff_command.cpp) and the round-trip test
// (tests/test_diff_request.cpp). B must exist and a tolerance file too
// (CLI11's ExistingPath, ExistingFile).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "reports/diff_request.hpp"

namespace fplab::cli {

// The options that the request reads after parsing.
struct DiffOptionHandles {
  CLI::Option* dtype = nullptr;  // given: r.dtype_given
};

// Declares every option of `app` writing into `r` (which must outlive it).
// After parsing, `r.dtype_given` is set by finish_diff_request.
DiffOptionHandles add_diff_options(CLI::App& app, DiffRequest& r);
void finish_diff_request(const DiffOptionHandles& h, DiffRequest& r);

// The request that `fplab diff ARGS...` makes (ARGS: what to_args()
// writes, or a user's). Throws CLI11's ParseError for what the command line
// would refuse.
DiffRequest parse_diff_request(const std::vector<std::string>& args);

}  // namespace fplab::cli
