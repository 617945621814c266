// The command line of `fplab sum`, bound to a SumRequest
// (reductions/sum_request.hpp): the one parser of its options, shared by the
// command (cli/sum_command.cpp) and the round-trip test
// (tests/test_sum_request.cpp).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "reductions/sum_request.hpp"

namespace fplab::cli {

// Declares every option of `app` writing into `r` (which must outlive it).
void add_sum_options(CLI::App& app, SumRequest& r);

// The request that `fplab sum ARGS...` makes (ARGS: what to_args()
// writes, or a user's). Throws CLI11's ParseError for what the command line
// would refuse.
SumRequest parse_sum_request(const std::vector<std::string>& args);

}  // namespace fplab::cli
