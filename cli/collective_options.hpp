// The command line of `fplab collective`, bound to a CollectiveRequest
// (mpi/collective_request.hpp): the one parser of its options, shared by
// the command (cli/collective_command.cpp) and the round-trip test
// (tests/test_collective_request.cpp).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "mpi/collective_request.hpp"

namespace fplab::cli {

// Declares every option of `app` writing into `r` (which must outlive it).
void add_collective_options(CLI::App& app, CollectiveRequest& r);

// The request that `fplab collective ARGS...` makes (ARGS: what to_args()
// writes, or a user's). Throws CLI11's ParseError for what the command line
// would refuse.
CollectiveRequest parse_collective_request(const std::vector<std::string>& args);

}  // namespace fplab::cli
